"""The tables a competition folder may hold besides CSV files: tab-separated ``.tsv`` files
(movie-review-sentiment-analysis-kernels-only's train.tsv and test.tsv), and either zipped
(``train.csv.zip``, one table in each archive, as MLE-bench's prepare.py leaves several
competitions' tables). They are read for inference as they are, and converted into CSV files
of the same stem in the task folder of mlguild's own (``sources/convert_folder``): every reader
downstream reads plain commas."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..task.folder import read_header
from ..util.exact_csv import read_csv_exact

PATTERNS = ("*.csv", "*.tsv", "*.csv.zip", "*.tsv.zip")  # the files that are tables


def _plain(name: str) -> str:
    return name[: -len(".zip")] if name.lower().endswith(".zip") else name


def _sep(path: Path) -> str:
    return "\t" if _plain(path.name).lower().endswith(".tsv") else ","


def other_form(path: Path) -> bool:
    """Whether the table ``path`` is one the task folder holds in another form (a TSV, a zip)."""
    return path.name != as_csv(path.name)


def _member(path: Path) -> zipfile.ZipFile:
    archive = zipfile.ZipFile(path)
    if len([n for n in archive.namelist() if not n.endswith("/")]) != 1:
        raise TaskError(f"{path} holds more than one file", f"unzip {path.name} and remove the archive")
    return archive


def header(path: Path) -> list[str]:
    """The first row of the table ``path``, as written."""
    if not other_form(path):
        return read_header(path)
    try:
        if path.suffix.lower() == ".zip":
            with _member(path) as archive, archive.open(archive.namelist()[-1]) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
                row = next(csv.reader(text, delimiter=_sep(path)), None)
        else:
            with open(path, newline="", encoding="utf-8-sig") as fh:
                row = next(csv.reader(fh, delimiter=_sep(path)), None)
    except (OSError, UnicodeDecodeError, csv.Error, zipfile.BadZipFile) as exc:
        raise TaskError(f"cannot read {path}: {exc}", "check that the file is a UTF-8 table") from exc
    if not row:
        raise TaskError(f"{path} is empty", "put the header row and data rows in it")
    return row


def frame(path: Path) -> pd.DataFrame:
    """The table ``path`` with every value as the exact string written."""
    if path.suffix.lower() == ".zip":
        _member(path).close()  # one table in it, or a clear line
    return read_csv_exact(path, sep=_sep(path))


def as_csv(name: str) -> str:
    """The name of a table's CSV form in the task folder (``train.tsv.zip`` is ``train.csv``)."""
    plain = _plain(name)
    return plain[: -len(".tsv")] + ".csv" if plain.lower().endswith(".tsv") else plain
