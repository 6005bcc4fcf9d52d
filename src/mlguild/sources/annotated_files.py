"""A competition folder whose labels are in COCO-style metadata: JSON files listing ``images``
(an id and a ``file_name`` each) and, for the train images, ``annotations`` (an ``image_id`` and
a ``category_id`` each). The FGVC competitions ship their data so: herbarium-2020/2021's
``train/metadata.json`` and ``test/metadata.json``, herbarium-2022's ``train_metadata.json`` and
a plain list of test images, iwildcam-2020's ``iwildcam2020_train_annotations.json``,
inaturalist-2019's ``train2019.json`` and ``val2019.json``.

The train table is derived as for files labelled by their folders (``sources/labelled_files``):
one row per annotated train image whose file is in the folder, its category in the sample
submission's prediction column, under a new, neutral id. The converted task folder holds the
train images renamed by those ids and the test images renamed by theirs, in place of their
folders (the FGVC folders and names tell the category: herbarium's
``train/images/155/04/...``, herbarium-2022's ``15504__037.jpg``), and none of the metadata files
(the train ones hold every label, the holdout's too).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from .file_columns import FILE_PROBE
from .folder_files import FolderFiles
from .labelled_files import LabelledFiles

_ID_KEYS = ("id", "image_id")  # an image record's id (herbarium-2022's test list says image_id)


def annotated_train_files(
    files: FolderFiles, sample: pd.DataFrame, id_column: str, target: str
) -> LabelledFiles | None:
    """The train images with the categories the metadata gives them, when the sample's ids are
    the ids of a metadata file's images; None when the folder holds no such metadata."""
    listings = [
        (name, found) for name in sorted(files.files - set(files.packed)) if (found := _listing(files.root, name))
    ]
    if not listings:
        return None
    wanted = [str(v) for v in sample[id_column].astype(str)]
    if not all(_plain_name(i) for i in wanted):  # the test files are renamed by their ids
        return None
    tests = [(name, images) for name, (images, labels) in listings if not labels and set(wanted) <= set(images)]
    if len(tests) != 1:
        return None
    test_json, test_images = tests[0]
    test_paths = _located(files, test_json, [test_images[i] for i in wanted])
    if test_paths is None:
        return None
    tested = set(test_paths)
    rows: list[tuple[str, str]] = []  # (file, category) of every annotated image in the folder
    train_jsons = []
    for name, (images, labels) in listings:
        annotated = [i for i in images if i in labels]
        located = _located(files, name, [images[i] for i in annotated], every=False) if annotated else None
        if located is None:
            continue
        train_jsons.append(name)
        # ids are a listing's own (test ids may repeat train ones): a test image is known by its file
        rows += [(path, labels[i]) for i, path in zip(annotated, located, strict=True) if path and path not in tested]
    suffixes = {PurePosixPath(p).suffix.lower() for p, _ in rows} | {
        PurePosixPath(p).suffix.lower() for p in test_paths
    }
    train_folder, test_folder = _common([p for p, _ in rows]), _common(test_paths)
    if len(rows) < 2 or len(suffixes) != 1 or "" in (train_folder, test_folder):
        return None
    if _nested(train_folder, test_folder):  # one folder holds the other: neither can be replaced whole
        return None
    order = np.random.default_rng(0).permutation(len(rows))  # ids that follow no category order
    width = len(str(len(rows) - 1))
    table = pd.DataFrame(
        [(f"train{k:0{width}d}", rows[i][1]) for k, i in enumerate(order)], columns=[id_column, target], dtype=str
    )
    return LabelledFiles(
        table=table,
        sources=[rows[i][0] for i in order],
        folder=train_folder,
        test_folder=test_folder,
        suffix=suffixes.pop(),
        how=f"{len(rows)} train images in {train_folder}/, labelled by the annotations of {', '.join(train_jsons)} "
        f"({len({c for _, c in rows})} categories)",
        test_sources=dict(zip(wanted, test_paths, strict=True)),
        left_out=tuple(name for name, _ in listings),
    )


def _listing(root: Path, name: str) -> tuple[dict[str, str], dict[str, str]] | None:
    """({image id: file name}, {image id: category}) of a COCO-style JSON file, or None for any
    other file (a label per image: an image with two categories is no single-label task)."""
    if not name.lower().endswith(".json"):
        return None
    try:
        with open(root / name, encoding="utf-8-sig") as fh:
            start = fh.read(256).lstrip()[:1]
            if start not in ("{", "["):
                return None
            fh.seek(0)
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    records = data.get("images") if isinstance(data, dict) else data
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        return None
    key = next((k for k in _ID_KEYS if all(k in r for r in records)), None)
    if key is None or not all(isinstance(r.get("file_name"), str) for r in records):
        return None
    images = {str(r[key]): r["file_name"] for r in records}
    labels: dict[str, str] = {}
    notes = data.get("annotations") if isinstance(data, dict) else None
    for note in notes if isinstance(notes, list) else []:
        if isinstance(note, dict) and "image_id" in note and "category_id" in note:
            image, category = str(note["image_id"]), str(note["category_id"])
            if labels.setdefault(image, category) != category:
                return None
    return images, labels


def _plain_name(name: str) -> bool:
    """Whether ``name`` can be a file's name as it is: no folder in it, not hidden, not empty."""
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".")


def _located(files: FolderFiles, listing: str, names: list[str], every: bool = True) -> list | None:
    """Each file name's path in the data folder: relative to the folder the listing is in, to the
    data folder, or to another folder (herbarium-2022's names are relative to train_images/),
    whichever the first names all lie in; a name not found is None (``every``: then None for all)."""
    probe = names[:FILE_PROBE]
    bases = dict.fromkeys([PurePosixPath(listing).parent.as_posix(), "", *files.folders])
    for base in bases:
        base = "" if base == "." else base
        if all(files.is_file(base, n) for n in probe):
            found = [f"{base}/{n}" if base else n for n in names]
            located = [f if f in files.files else None for f in found]
            if every and None in located:
                return None
            return located
    return None


def _common(paths: list[str]) -> str:
    """The deepest folder that holds every path ('' for the data folder itself)."""
    parts = [PurePosixPath(p).parent.parts for p in paths]
    shared: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        shared.append(level[0])
    return "/".join(shared)


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(f"{b}/") or b.startswith(f"{a}/")
