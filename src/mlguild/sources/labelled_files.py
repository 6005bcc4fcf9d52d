"""A competition folder with no train table: each train row is a file whose label is the name of
its folder (``train/<label>/<file>``, the layout torchvision's ImageFolder reads:
plant-seedlings-classification, tensorflow-speech-recognition-challenge's ``train/audio/<word>/``)
or a token of its name (dogs-vs-cats' ``train/cat.0.jpg``, the ICML 2013 whale challenge's
``..._TRAIN0_1.aif``), and a sample submission whose ids name the test files.

The train table is derived: one row per train file, its label in the sample submission's
prediction column. Every train file gets a new, neutral name (``train00017.png``, numbered in a
seeded random order) in the converted task folder (``sources/convert_folder``), and the folder
the files came from is left out of it: a file's folder or name would tell its label, the
holdout's too, and a number that followed the labels' order would as well. Which original file
each id is stays beside the task folder, outside what scripts see (``TRAIN_FILES_FROM``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from .file_columns import FILE_PROBE, MEDIA_SUFFIXES, modality_of
from .folder_files import FolderFiles

DERIVED_TRAIN = "train.csv"  # the derived train table's name in the converted folder's public/
TRAIN_FILES_FROM = "train_files_from.csv"  # in the converted task folder, beside public/: id -> original file
_MIN_PER_LABEL = 2  # a label that names fewer files than this is no class, but a file's own name


@dataclass
class LabelledFiles:
    """The derived train table and where its files come from."""

    table: pd.DataFrame  # the id column and the label column, every value text
    sources: list[str]  # the original file of each row (its path in the data folder), in the table's order
    folder: str  # the train files' folder relative to the data folder: left out, and refilled with renamed files
    test_folder: str  # the test files' folder relative to the data folder
    suffix: str  # what the ids lack of their file names ('' when the ids carry their extension)
    how: str  # the sentence that says where the labels came from
    # test files named otherwise than by their ids (their paths, in the sample's order of ids):
    # renamed to <id><suffix> in place of their folder, which is left out
    test_sources: dict[str, str] | None = None
    left_out: tuple[str, ...] = ()  # other files the converted folder leaves out (metadata that holds labels)

    def file_spec(self, id_column: str) -> dict[str, str]:
        """The task spec's fields that say which file each row is: the id names it."""
        example = f"{self.table[id_column].iloc[0]}{self.suffix}"
        return {
            "file_column": id_column,
            "train_files": self.folder,
            "test_files": self.test_folder,
            "file_suffix": self.suffix,
            "modality": modality_of(example),
        }


def labelled_train_files(files: FolderFiles, sample: pd.DataFrame, id_column: str, target: str) -> LabelledFiles | None:
    """The train files among ``files`` with the labels their folders or names give, when the
    sample submission's ids name files in a test folder and the train files (of the same kind, in
    a folder whose path says train) carry a label each; None otherwise."""
    ids = [v for v in sample[id_column].head(FILE_PROBE).astype(str) if v]
    test = _test_folder(files, ids)
    if test is None:
        return None
    test_folder, suffix = test
    extension = PurePosixPath(f"{ids[0]}{suffix}").suffix.lower()
    train = [
        PurePosixPath(f)
        for f in sorted(files.files)
        if PurePosixPath(f).suffix.lower() == extension
        and not _under(f, test_folder)
        and any("train" in part.lower() for part in PurePosixPath(f).parent.parts)
    ]
    found = _by_folder(train) or _by_name(train, [f"{v}{suffix}" for v in ids])
    if found is None or _under(test_folder, found[0].as_posix()):  # the train folder, left out, holds the tests
        return None
    root, labels, sources, how = found
    order = np.random.default_rng(0).permutation(len(sources))  # numbers that follow no label order
    width = len(str(len(sources) - 1))
    carried = extension if not suffix else ""  # the ids name their files as the sample's do
    rows = [(f"train{k:0{width}d}{carried}", labels[i]) for k, i in enumerate(order)]
    table = pd.DataFrame(rows, columns=[id_column, target], dtype=str)
    return LabelledFiles(
        table=table,
        sources=[sources[i].as_posix() for i in order],
        folder=root.as_posix(),
        test_folder=test_folder or ".",
        suffix=suffix,
        how=how.format(folder=root.as_posix(), n=len(sources), k=len(set(labels))),
    )


def _under(path: str, folder: str) -> bool:
    return folder in ("", ".") or path == folder or path.startswith(f"{folder}/")


def _test_folder(files: FolderFiles, ids: list[str]) -> tuple[str, str] | None:
    """(the folder, the suffix) where every probed id names a file; a folder that says test first."""
    if not ids:
        return None
    where = [(d, s) for d in files.folders for s in MEDIA_SUFFIXES if all(files.is_file(d, f"{v}{s}") for v in ids)]
    named = [w for w in where if "test" in w[0].rsplit("/", 1)[-1].lower()] or where
    return named[0] if named else None


def _by_folder(train: list[PurePosixPath]) -> tuple[PurePosixPath, list[str], list[PurePosixPath], str] | None:
    """Files in folders named by their labels, all beside each other (``train/<label>/<file>``)."""
    parents = {p.parent for p in train}
    roots = {p.parent for p in parents}
    if len(parents) < 2 or len(roots) != 1:
        return None
    labels = [p.parent.name for p in train]
    if min(Counter(labels).values()) < _MIN_PER_LABEL:
        return None
    return roots.pop(), labels, train, "{n} train files in {folder}/, labelled by the folder each is in ({k} labels)"


def _by_name(
    train: list[PurePosixPath], test_names: list[str]
) -> tuple[PurePosixPath, list[str], list[PurePosixPath], str] | None:
    """Files in one folder whose names carry the label as their first or last token (``cat.0.jpg``,
    ``..._TRAIN0_1.aif``): a token of few values, each on several files, that no test file's name
    has in its place (test files carry no label). Both places qualifying alike is no answer."""
    if len({p.parent for p in train}) != 1 or len(train) < 2 * _MIN_PER_LABEL:
        return None
    found = []
    for place, word in ((0, "first"), (-1, "last")):
        labels = [_tokens(p.name)[place] for p in train]
        counts = pd.Series(labels).value_counts()
        test_tokens = {_tokens(name)[place] for name in test_names}
        if 2 <= len(counts) <= max(2, len(train) // 5) and counts.min() >= _MIN_PER_LABEL:
            if not test_tokens & set(counts.index):
                found.append((len(counts), labels, word))
    lacking = _lacking_in_test([p.name for p in train], test_names)
    found.sort(key=lambda f: (f[0], f[2] != lacking))
    if not found or (len(found) > 1 and found[0][0] == found[1][0] and lacking is None):
        return None
    _, labels, word = found[0]
    how = f"{{n}} train files in {{folder}}/, labelled by the {word} part of each file's name ({{k}} labels)"
    return train[0].parent, labels, train, how


def _lacking_in_test(train_names: list[str], test_names: list[str]) -> str | None:
    """Which part ('first' or 'last') train names have that test names lack, when every train name
    has one part more than every test name and the others match it in kind (digits, letters) part
    by part: ``..._TRAIN0_1`` against ``..._Test0`` lacks the last, ``cat.0`` against ``1`` the first."""
    train_parts = [[_kind(t) for t in _tokens(n)] for n in train_names]
    test_parts = [[_kind(t) for t in _tokens(n)] for n in test_names]
    sizes, test_sizes = {len(t) for t in train_parts}, {len(t) for t in test_parts}
    if len(sizes) != 1 or test_sizes != {sizes.pop() - 1}:
        return None
    kinds = {tuple(t) for t in test_parts}
    matches = [word for word, cut in (("first", slice(1, None)), ("last", slice(None, -1)))
               if {tuple(t[cut]) for t in train_parts} <= kinds]  # fmt: skip
    return matches[0] if len(matches) == 1 else None


def _kind(token: str) -> str:
    """A name part's kind: its runs of digits and of letters (``TRAIN0`` and ``Test0`` alike)."""
    return re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "a", token))


def _tokens(name: str) -> list[str]:
    """A file name's parts between dots, underscores and dashes, its extension left out."""
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return re.split(r"[._-]", stem) or [stem]
