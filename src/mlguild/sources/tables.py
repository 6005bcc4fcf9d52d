"""The tables a competition folder may hold besides CSV files: tab-separated ``.tsv`` files
(movie-review-sentiment-analysis-kernels-only's train.tsv and test.tsv), either zipped
(``train.csv.zip``, one table in each archive, as MLE-bench's prepare.py leaves several
competitions' tables) or packed in 7z (statoil's ``train.json.7z``, mercari's ``train.tsv.7z``:
the one table unpacked once into a scratch folder of the process), and a JSON array of flat records
or JSON lines (``.json``, ``.jsonl``, ``.ndjson``: one record a line) in the data folder itself
(random-acts-of-pizza's train.json: a JSON boolean is written 1 or 0, a list or an object as its
JSON text, null as an empty cell), and CSV files separated by ';' (a spreadsheet's export where
the decimal mark is a comma), tabs or '|'. They are read for inference as they are, and converted into CSV files
of the same stem in the task folder of mlguild's own (``sources/convert_folder``): every reader
downstream reads plain commas."""

from __future__ import annotations

import atexit
import csv
import io
import json
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

import pandas as pd

from ..core.errors import TaskError
from ..task.folder import read_header
from ..util.exact_csv import read_csv_exact

# the files that are tables, in any folder (JSON arrays: json_tables)
PATTERNS = ("*.csv", "*.tsv", "*.csv.zip", "*.tsv.zip", "*.csv.7z", "*.tsv.7z")
_PACKED = (".zip", ".7z")  # one table in an archive
_unpacked: dict[tuple[Path, int, int], Path] = {}  # a 7z table (path, mtime, size): the file it holds


_JSON = (".json", ".jsonl", ".ndjson")


def json_tables(data_dir: Path) -> list[Path]:
    """The JSON files directly in ``data_dir`` that hold an array (of records: ``frame`` says
    when one does not) or JSON lines (an object a line); a JSON object (metadata, a mapping,
    even on one line) is not a table."""
    found = []
    named = [p for suffix in _JSON for p in data_dir.glob(f"*{suffix}")]
    for path in sorted([*named, *data_dir.glob("*.json.7z")]):
        try:
            with open(_member_file(path), encoding="utf-8-sig", errors="replace") as fh:
                start = fh.read(256).lstrip()
                fh.seek(0)
                lines = [line for line in (fh.readline(), fh.readline()) if line.strip()]
        except TaskError:
            continue  # a 7z archive that cannot be read: left for the refusal that names it
        if start.startswith("[") or (len(lines) == 2 and _object_line(lines[0]) and lines[1].lstrip().startswith("{")):
            found.append(path)
    return found


def _object_line(line: str) -> bool:
    """Whether one line of text is a whole JSON object (the first line of JSON lines)."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _is_json(path: Path) -> bool:
    return path.suffix.lower() in _JSON


def _plain(name: str) -> str:
    return next((name[: -len(s)] for s in _PACKED if name.lower().endswith(s)), name)


def _member_file(path: Path) -> Path:
    """``path`` itself, or for a 7z table the one file it holds, unpacked into a scratch folder
    of this process (removed at exit) the first time it is asked for."""
    if not path.name.lower().endswith(".7z"):
        return path
    stat = path.stat()
    key = (path, stat.st_mtime_ns, stat.st_size)  # an archive written anew is unpacked anew
    if key in _unpacked and _unpacked[key].exists():
        return _unpacked[key]
    try:
        import py7zr
    except ImportError:
        raise TaskError(f"cannot read {path}: py7zr is not installed", f"unpack {path.name} by hand") from None
    try:
        with py7zr.SevenZipFile(path) as archive:
            names = [i.filename for i in archive.list() if i.is_file]
            plain = len(names) == 1 and not PurePosixPath(names[0]).is_absolute() and ".." not in names[0]
            if not plain:
                raise TaskError(f"{path} holds {len(names)} files, not one table", f"unpack {path.name} by hand")
            scratch = Path(tempfile.mkdtemp(prefix="mlguild-7z-"))
            atexit.register(shutil.rmtree, scratch, True)
            archive.extract(path=scratch, targets=names)
    except (OSError, ValueError, py7zr.exceptions.ArchiveError, py7zr.exceptions.PasswordRequired) as exc:
        raise TaskError(f"cannot read {path}: {exc}", f"unpack {path.name} by hand, then run again") from None
    _unpacked[key] = scratch / names[0]
    return _unpacked[key]


SEPARATORS = (",", ";", "\t", "|")


def sniff_separator(path: Path) -> str:
    """The field separator of a CSV: the one its header row holds most of (a ';'-separated
    export from a spreadsheet in a locale with decimal commas is common)."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline()
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    best = max(SEPARATORS, key=lambda sep: counts[sep])
    return best if counts[best] > counts[","] else ","


def _sep(path: Path) -> str:
    name = _plain(path.name.lower())
    if name.endswith(".tsv"):
        return "\t"
    packed_csv = path.name.lower().endswith(".7z") and name.endswith(".csv")
    return sniff_separator(_member_file(path)) if path.name.lower().endswith(".csv") or packed_csv else ","


def other_form(path: Path) -> bool:
    """Whether the table ``path`` is one the task folder holds in another form (a TSV, a zip,
    JSON, a CSV separated by ';', tabs or '|')."""
    plain_csv = path.name.lower().endswith(".csv") and path.is_file()  # not a table inference derives
    return path.name != as_csv(path.name) or (plain_csv and _sep(path) != ",")


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _records(path: Path) -> pd.DataFrame:
    """A JSON array of records, or JSON lines (one record a line), as a table of strings."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        if text.lstrip().startswith("{"):  # JSON lines
            records: object = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TaskError(f"cannot read {path} as JSON: {exc}", f"check {path}") from exc
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records) or not records:
        raise TaskError(
            f"{path} is not a JSON array of records nor JSON lines",
            f"write it as a CSV table, or move it out of {path.parent}",
        )
    columns = list(dict.fromkeys(k for r in records for k in r))
    return pd.DataFrame([[_cell(r.get(c)) for c in columns] for r in records], columns=columns, dtype=str)


def _member(path: Path) -> zipfile.ZipFile:
    archive = zipfile.ZipFile(path)
    if len([n for n in archive.namelist() if not n.endswith("/")]) != 1:
        raise TaskError(f"{path} holds more than one file", f"unzip {path.name} and remove the archive")
    return archive


def header(path: Path) -> list[str]:
    """The first row of the table ``path``, as written."""
    if path.name.lower().endswith(".7z"):
        return header(_member_file(path))
    if not other_form(path):
        return read_header(path)
    if _is_json(path):
        return list(_records(path).columns)
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


def frame(path: Path, nrows: int | None = None) -> pd.DataFrame:
    """The table ``path`` (its first ``nrows`` rows, or all) with every value as the exact
    string written."""
    if path.name.lower().endswith(".7z"):
        return frame(_member_file(path), nrows)
    if _is_json(path):
        return _records(path).head(nrows)
    if path.suffix.lower() == ".zip":
        _member(path).close()  # one table in it, or a clear line
    return read_csv_exact(path, sep=_sep(path), nrows=nrows)


def as_csv(name: str) -> str:
    """The name of a table's CSV form in the task folder (``train.tsv.zip`` is ``train.csv``)."""
    plain = _plain(name)
    for suffix in (".tsv", *_JSON):
        if plain.lower().endswith(suffix):
            return plain[: -len(suffix)] + ".csv"
    return plain
