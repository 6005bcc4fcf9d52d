"""A competition folder whose tables are NumPy arrays: a two-dimensional train array (a row per
train row, a column per input), a one-dimensional array of its labels, and a two-dimensional
test array with as many columns, its rows those the sample submission lists in order
(ml2021spring-hw2's ``timit_11/train_11.npy``, ``train_label_11.npy`` and ``test_11.npy``; many
course competitions' ``X_train.npy``, ``y_train.npy``, ``X_test.npy``).

The arrays become the task's CSV tables in the converted task folder (``sources/convert_folder``):
``train.csv`` (an id, ``f0``... one column per input, and the label in the sample's prediction
column) and ``test.csv`` (the sample's ids and the inputs), written a block of rows at a time.
The arrays themselves are left out of it: the labels' array holds the holdout's labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from .folder_files import FolderFiles

_LABEL_WORDS = re.compile(r"(label|target|(^|[_\-.])y($|[_\-.]))", re.IGNORECASE)
_BLOCK = 50_000  # rows written at a time


@dataclass
class ArrayTables:
    """The three arrays (paths in the data folder) and what the tables are called."""

    train: str
    labels: str
    test: str
    rows: int  # train rows
    columns: int  # inputs per row

    @property
    def how(self) -> str:
        return f"NumPy arrays of {self.rows} train rows of {self.columns} inputs ({self.train}), their labels ({self.labels}) and the test rows' inputs ({self.test})"

    def head(self, root: Path, id_column: str, target: str, rows: int) -> pd.DataFrame:
        """The train table's first ``rows`` rows, as inference reads a train file's."""
        return next(self.train_blocks(root, id_column, target, rows))

    def train_blocks(self, root: Path, id_column: str, target: str, stop: int | None = None):
        inputs, labels = _load(root / self.train), _load(root / self.labels)
        end = self.rows if stop is None else min(stop, self.rows)
        width = len(str(self.rows - 1))
        for start in range(0, end, _BLOCK):
            block = _inputs(inputs[start : min(start + _BLOCK, end)])
            block.insert(0, id_column, [f"train{k:0{width}d}" for k in range(start, start + len(block))])
            block[target] = [_text(v) for v in labels[start : start + len(block)]]
            yield block

    def write(self, root: Path, public: Path, id_column: str, target: str, ids: pd.Series, train: str, test: str):
        """Write the train and the test table into ``public`` (replacing what is there: a link to
        the user's file is never written through), and remove the arrays there."""
        for name in (train, test):
            (public / name).unlink(missing_ok=True)
        for k, block in enumerate(self.train_blocks(root, id_column, target)):
            block.to_csv(public / train, mode="w" if k == 0 else "a", header=k == 0, index=False)
        inputs = _load(root / self.test)
        for k, start in enumerate(range(0, len(inputs), _BLOCK)):
            block = _inputs(inputs[start : start + _BLOCK])
            block.insert(0, id_column, ids.iloc[start : start + len(block)].to_numpy())
            block.to_csv(public / test, mode="w" if k == 0 else "a", header=k == 0, index=False)
        for name in (self.train, self.labels, self.test):
            (public / name).unlink(missing_ok=True)


def array_tables(files: FolderFiles, test_rows: int) -> ArrayTables | None:
    """The train, labels and test arrays among the folder's .npy files, when exactly one of each
    fits: a 2-D array whose name says train, a 1-D array of as many rows whose name says train and
    label (or target, or y), and a 2-D array whose name says test with as many columns and
    ``test_rows`` rows (the sample submission's)."""
    shapes = {}
    for name in sorted(files.files - set(files.packed)):
        if name.lower().endswith(".npy"):
            shape = _shape(files.root / name)
            if shape is not None:
                shapes[name] = shape
    said = lambda name, word: word in PurePosixPath(name).name.lower()
    labels = [n for n, s in shapes.items() if len(s) == 1 and said(n, "train") and _LABEL_WORDS.search(_stem(n))]
    trains = [n for n, s in shapes.items() if len(s) == 2 and said(n, "train") and not _LABEL_WORDS.search(_stem(n))]
    tests = [n for n, s in shapes.items() if len(s) == 2 and said(n, "test") and s[0] == test_rows]
    if len(labels) != 1 or len(trains) != 1 or len(tests) != 1:
        return None
    (rows, columns), label_rows = shapes[trains[0]], shapes[labels[0]][0]
    if rows != label_rows or shapes[tests[0]][1] != columns or rows < 2:
        return None
    return ArrayTables(trains[0], labels[0], tests[0], rows, columns)


def _stem(name: str) -> str:
    return PurePosixPath(name).name[: -len(".npy")]


def _shape(path: Path) -> tuple[int, ...] | None:
    """An array file's shape from its header alone (None for no plain numeric array)."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):  # empty, truncated, pickled objects, or no .npy at all
        return None
    return tuple(array.shape) if array.dtype.kind in "biufUS" else None


def _load(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r", allow_pickle=False)


def _inputs(block: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(np.asarray(block), columns=[f"f{j}" for j in range(block.shape[1])])


def _text(value: object) -> str:
    """A label as the sample submission writes it: bytes decoded, a whole float without '.0'."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)
