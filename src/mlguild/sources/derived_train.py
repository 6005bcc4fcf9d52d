"""A competition folder with no train table: the ways inference derives one (train files
labelled by their folders or names, ``labelled_files``; by COCO-style metadata,
``annotated_files``; NumPy arrays of the inputs and labels, ``array_tables``), and the view of
the folder's files they look in: those on the disk first, then with the archives' members
(``folder_files``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..core.errors import TaskError
from . import tables
from .annotated_files import annotated_train_files
from .array_tables import ArrayTables, array_tables
from .file_columns import FILE_PROBE
from .folder_files import FolderFiles, archive_files
from .labelled_files import DERIVED_TRAIN, LabelledFiles, labelled_train_files
from .sample_test_rows import unpack_first

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


def derived_train(
    present: RowFiles, data_dir: Path, sample_path: Path, sample_header: list[str], id_column: str, refused: TaskError
) -> tuple[LabelledFiles | None, ArrayTables | None, str]:
    """The train table a folder with none derives (labelled files, or NumPy arrays), with what
    inference says of it; ``refused`` (why no train table was found), with the fix to unpack
    the folder's archives where it has any, when neither way finds one."""
    labelled = present.first(lambda files: labelled_by_files(files, sample_path, id_column))
    arrays = arrays_as_tables(present.disk, sample_path, sample_header, id_column) if labelled is None else None
    if labelled is not None:
        how = labelled.how
    elif arrays is not None:
        how = arrays.how
    else:
        raise unpack_first(refused, data_dir) from None
    return labelled, arrays, f"no train table: {how}; the train table is derived from them ({DERIVED_TRAIN})"


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
