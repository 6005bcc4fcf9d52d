"""The column of a competition's CSVs whose values name each row's file (an image or a sound),
with the folders that hold the train and test files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..task.folder import read_header
from .folder_files import FolderFiles

PER_ROW_TABLES = 10  # CSV files in one subfolder, alike, from which on they are rows' own data
FILE_PROBE = 20  # rows whose values are looked up as files to recognise a file column
MEDIA_SUFFIXES = (
    *("", ".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".gif"),
    *(".wav", ".aif", ".aiff", ".mp3", ".flac", ".json", ".txt", ".npy", ".csv"),
)
_IMAGES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".gif")
_SOUNDS = (".wav", ".aif", ".aiff")  # what the audio recipes read (features/audio.py.j2)
_ARRAYS = (".npy", ".csv")  # a NumPy array, or a CSV of numeric columns, per row (features/arrays.py.j2)


def modality_of(name: str) -> str:
    """The modality of rows whose files are named like ``name``."""
    name = name.lower()
    if name.endswith(_IMAGES):
        return "image_files"
    return "audio_files" if name.endswith(_SOUNDS) else "array_files" if name.endswith(_ARRAYS) else "tabular"


def files_note(files: dict) -> str:
    """What inference says of a task whose rows name files (``file_column``'s answer)."""
    return (
        f"each row names a file: column {files['file_column']!r}, train files in {files['train_files']}/, "
        f"test files in {files['test_files']}/ ({files['modality']})"
    )


def file_column(files: FolderFiles, train: pd.DataFrame, test: pd.DataFrame, columns: list[str]) -> dict | None:
    """The column whose values name each row's file (in a folder for train rows and one for test
    rows), with those folders, the suffix the values lack, and the modality; None if none does.
    Train files in subfolders named by a label column add ``train_subfolders``: that column; files
    in subfolders named by their values' first characters add ``shards``: {role: depth}."""
    folders = files.folders
    # Every file's name, once: a column whose first value names no file anywhere is passed over at
    # once (a table of 785 pixel columns would otherwise probe every column against every other).
    names = files.names
    for column in dict.fromkeys(columns):
        if column not in train or column not in test:
            continue
        found: dict[str, tuple] = {}
        for rows, role in ((train, "train"), (test, "test")):
            values = [v for v in rows[column].head(FILE_PROBE).astype(str) if v]
            if not values or not any(Path(f"{values[0]}{s}").name in names for s in MEDIA_SUFFIXES):
                break
            # Each train file in a folder named by its label; else each file in subfolders named by
            # its value's first characters; else all in one folder. In that order: rows sorted by
            # label, or by id, would all lie in one of those subfolders too.
            named: list[tuple] = []
            if role == "train":
                named = [(d, s, c) for d, s, c in _by_label(files, folders, rows, column) if "train" in _name(d)]
            sharded = _sharded(files, folders, values) if not named else []
            named = named or [w for w in sharded if role in _name(w[0])] or sharded
            if not named:
                where = [
                    (d, s) for d in folders for s in MEDIA_SUFFIXES if all(files.is_file(d, f"{v}{s}") for v in values)
                ]
                named = [w for w in where if role in _name(w[0])] or where
            if not named:
                break
            found[role] = named[0]
        if len(found) == 2 and found["train"][1] == found["test"][1]:
            suffix = found["train"][1]
            example = f"{train[column].iloc[0]}{suffix}".lower()
            nested: dict = {}
            if len(found["train"]) > 2 and isinstance(found["train"][2], str):
                nested["train_subfolders"] = found["train"][2]
            shards = {role: w[2] for role, w in found.items() if len(w) > 2 and isinstance(w[2], int)}
            if shards:  # {role: depth}: laid flat when converted
                nested["shards"] = shards
            return nested | {
                "file_column": column,
                "train_files": found["train"][0] or ".",
                "test_files": found["test"][0] or ".",
                "file_suffix": suffix,
                "modality": modality_of(example),
            }
    return None


def _name(folder: str) -> str:
    """A folder's own name, lower case."""
    return folder.rsplit("/", 1)[-1].lower()


_SHARD_DEPTHS = (1, 2, 3)  # seti's train/0/0a1b.npy; g2net's train/0/a/1/0a1b2c.npy


def _sharded(files: FolderFiles, folders: list[str], values: list[str]) -> list[tuple[str, str, int]]:
    """(folder, suffix, depth) where every probed value's file is under subfolders named by its
    first ``depth`` characters, one each (``folder/0/a/0a1b.npy`` at depth 2), and every subfolder
    of the folder is named by one character; they are laid flat in the converted task folder
    (sources/convert_folder)."""
    children: dict[str, list[str]] = {}
    for folder in folders:
        if folder:
            parent, _, name = folder.rpartition("/")
            children.setdefault(parent, []).append(name)
    found = []
    for depth in _SHARD_DEPTHS:
        if any(len(v) <= depth or not _plain(v) for v in values):
            continue
        for d in (d for d, names in children.items() if values[0][0] in names and all(len(n) == 1 for n in names)):
            for s in MEDIA_SUFFIXES:
                if all(files.is_file(d, f"{'/'.join(v[:depth])}/{v}{s}") for v in values):
                    found.append((d, s, depth))
    return found


def _plain(value: str) -> bool:
    """Whether a value can be a file's name as it is: no folder in it, not hidden."""
    return "/" not in value and "\\" not in value and not value.startswith(".")


def _by_label(files: FolderFiles, folders: list[str], rows: pd.DataFrame, column: str) -> list[tuple[str, str, str]]:
    """(folder, suffix, label column) where every probed row's file is ``folder/<label>/<value>``
    (paddy-disease-classification's train_images/blast/100330.jpg): the label column names the
    subfolder (sources/convert_folder lays such files flat)."""
    probe = rows.head(FILE_PROBE).astype(str)
    found = []
    for label in [c for c in probe.columns if c != column]:
        if probe[label].eq("").any():
            continue
        for d in folders:
            for s in MEDIA_SUFFIXES:
                pairs = zip(probe[label], probe[column], strict=True)
                if all(files.is_file(d, f"{a}/{v}{s}") for a, v in pairs):
                    found.append((d, s, label))
    return found


def per_row_tables(csvs: list[Path], data_dir: Path) -> set[Path]:
    """CSV files that are rows' own data, not tables: those of a subfolder holding at least
    ``PER_ROW_TABLES`` of them with one header (predict-volcanic-eruptions' train/1000213997.csv,
    one segment of ten sensors each, named by the row's id)."""
    by_folder: dict[Path, list[Path]] = {}
    for path in csvs:
        if path.parent != data_dir and path.suffix.lower() == ".csv":
            by_folder.setdefault(path.parent, []).append(path)
    found: set[Path] = set()
    for paths in by_folder.values():
        if len(paths) >= PER_ROW_TABLES and len({_header_or_none(p) for p in paths[:200]}) == 1:
            found.update(paths)
    return found


def _header_or_none(path: Path) -> tuple[str, ...] | None:
    try:
        return tuple(read_header(path))
    except TaskError:  # an empty or unreadable file: alike with others of its kind
        return None
