"""A competition folder whose test rows are listed only by the sample submission: each row's
image or sound in a test folder, no CSV of test rows (most of MLE-bench's image and audio
competitions: ``train.csv`` with id and label, ``train/`` and ``test/`` files,
``sample_submission.csv``).

Such a folder is converted into the task layout, as every other source is
(``sources/convert_folder``): the test table is the sample submission's id column (the id
names each row's file, as it does in the train file). Everything downstream (the firewall, the recipes, the
grader) reads a test file as in any task. The test table is derived only when the sample's ids
really name files in a test folder and the train file's ids name files in another; a sample
whose ids name nothing stays refused (a table of ids alone holds no inputs).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..util.exact_csv import read_csv_exact
from .file_columns import FILE_PROBE, file_column
from .folder_files import FolderFiles, archive_files, members

DERIVED_TEST = "test.csv"  # the derived test table's name in the converted folder's public/


def sample_lists_test_files(
    files: FolderFiles, sample_path: Path, train: pd.DataFrame, id_column: str
) -> pd.DataFrame | None:
    """The test table (the sample submission's id column, every row) when those ids name one
    file each in a test folder and the train file's ids name files in another; else None."""
    if id_column not in train:
        return None
    rows = read_csv_exact(sample_path)[[id_column]]
    if rows.empty or rows[id_column].duplicated().any():  # ids that repeat list no files one by one
        return None
    found = file_column(files, train, rows.head(FILE_PROBE), [id_column])
    if found is None or found["train_files"] == found["test_files"]:
        return None
    return rows


def listed_note(rows: int, sample_name: str) -> str:
    """What inference says of a folder whose test rows the sample submission alone lists."""
    return (
        f"no CSV of test rows: the {rows} ids of {sample_name} name the test rows' files, "
        f"so the test table is those ids ({DERIVED_TEST} of the converted task folder)"
    )


def no_test_rows(data_dir: Path, sample_path: Path, train_path: Path) -> TaskError:
    """The refusal of a folder with no test table whose sample's ids name no files, with the fix:
    unpack the archives there (MLE-bench zips some competitions' image folders), or write one."""
    packed = archives(data_dir)
    return TaskError(
        f"no CSV of test rows in {data_dir} besides {sample_path.name} and {train_path.name}, and "
        f"{sample_path.name}'s ids name no files in a test folder",
        f"unpack the archives that may hold the files ({', '.join(packed[:4])}) in {data_dir}, then run again"
        if packed
        else f"write a test.csv holding {sample_path.name}'s id column (and the rows' inputs), then run again",
    )


def archives(data_dir: Path) -> list[str]:
    """The archives in ``data_dir`` whose files inference could not read (a damaged or an
    encrypted one, a 7z one without py7zr): unpacked by hand, they may hold what is missing.
    Zip, tar and 7z archives are read as if unpacked (sources/folder_files)."""
    return sorted(p.name for p in archive_files(data_dir) if not members(p))


def unpack_first(refused: TaskError, data_dir: Path) -> TaskError:
    """``refused`` with the fix to unpack the archives of ``data_dir`` first, when it holds any."""
    packed = archives(data_dir)
    if not packed:
        return refused
    return TaskError(
        refused.message,
        f"unpack the archives that may hold the files ({', '.join(packed[:4])}) in {data_dir}, then run again",
    )
