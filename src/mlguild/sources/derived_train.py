"""A competition folder with no train table: the ways inference derives one (train files
labelled by their folders or names, ``labelled_files``; by COCO-style metadata,
``annotated_files``; NumPy arrays of the inputs and labels, ``array_tables``), and the view of
the folder's files they look in: those on the disk first, then with the archives' members
(``folder_files``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from . import tables
from .annotated_files import annotated_train_files
from .array_tables import ArrayTables, array_tables
from .file_columns import FILE_PROBE
from .folder_files import FolderFiles, archive_files
from .labelled_files import LabelledFiles, labelled_train_files

T = TypeVar("T")


class RowFiles:
    """The data folder's files as inference looks for the rows' files: those on the disk first,
    then with the archives' members (listing them can mean reading a .tar.gz whole);
    ``used``: the view that found what was asked last."""

    def __init__(self, disk: FolderFiles):
        self.disk, self.used = disk, disk
        self._packed: FolderFiles | None = None

    def first(self, attempt: Callable[[FolderFiles], T | None]) -> T | None:
        found = attempt(self.disk)
        self.used = self.disk
        if found is None and archive_files(self.disk.root):
            self._packed = self._packed or self.disk.with_archives()
            found, self.used = attempt(self._packed), self._packed
        return found


def labelled_by_files(present: FolderFiles, sample_path: Path, id_column: str) -> LabelledFiles | None:
    """Train files labelled by their folders or names, or by COCO-style metadata, for the
    sample's one prediction column (several are its classes' probabilities: the label is unnamed)."""
    sample = tables.frame(sample_path)
    predicted = [c for c in sample.columns if c != id_column]
    if id_column not in sample or not predicted:
        return None
    target = predicted[0] if len(predicted) == 1 else "label"
    found = labelled_train_files(present, sample.head(FILE_PROBE), id_column, target)
    return found or annotated_train_files(present, sample, id_column, target)


def arrays_as_tables(files: FolderFiles, sample_path: Path, header: list[str], id_column: str) -> ArrayTables | None:
    """NumPy arrays of the inputs and labels, for a sample of one prediction column."""
    if len(header) != 2 or header[0] != id_column:
        return None
    return array_tables(files, len(tables.frame(sample_path)))
