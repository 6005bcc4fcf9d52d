"""Strict CSV reading for submissions: every row's field count checked, every cell kept as text.

Why not ``pandas.read_csv``: an extra field in the first data row silently shifts the
columns, a short row is padded with empty strings that look like real empty fields, and
``dtype=str`` costs over a second per million rows. So when a file has no quote and no
bare ``\\r``, each line's field count (commas + 1) is counted on the bytes with numpy
and the text is cut with ``str.split``; otherwise the csv module (RFC 4180) reads it.

A UTF-8 byte-order mark is stripped and accepted (Excel writes one); blank lines are
allowed only at the end of a file.

With ``max_rows`` (the rows a submission must have), a file holding more is read only
until that is certain: its newlines are counted chunk by chunk, and once there are enough
for ``max_rows + 1`` rows, only the start up to there is parsed; if it holds that many
complete rows (quoted newlines can fool a count, a parse cannot), the rest is never read.
A hostile file of extra rows then costs what a valid one does.
"""

from __future__ import annotations

import csv
import io
import itertools
import operator
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from mlguild.core.errors import SubmissionError

_BOM = b"\xef\xbb\xbf"
_CONTENT = re.compile(rb"[^\r\n]")
_CHUNK = 4 << 20
_MAX_MESSAGE = 400
FIX = "write the file with the sample submission's header, ids and row order (UTF-8, comma-separated)"
Table = tuple[list[str], list[list[str]]]  # header, one list of strings per column


def fail(reason: str, message: str) -> SubmissionError:
    """A rejection: ``reason`` first (a stable code), then a message kept short, because it ends
    up in the journal and in the next prompt (cell values in it are cut by ``preview``)."""
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    return SubmissionError(reason, message, fix=FIX)


def preview(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters and followed by its length when longer."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(str(value)):,} chars)"


def read_table(path: str | os.PathLike, max_bytes: int | None, max_rows: int | None = None) -> Table:
    """Read a CSV with every row's field count checked. Raises SubmissionError.

    With ``max_rows``, a file with more data rows yields exactly its first ``max_rows + 1``
    rows (so a caller sees that there are too many, and which ids they hold) and the rest of
    it is not read."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise fail("missing", f"{p} does not exist") from None
    except OSError as e:
        raise fail("missing", f"{p} cannot be read: {e.strerror}") from None
    if not p.is_file():
        raise fail("missing", f"{p} is not a regular file")
    # Refused from the inode alone, so a huge (or sparse) file costs nothing.
    if max_bytes is not None and st.st_size > max_bytes:
        raise fail("too_large", f"{p} is {st.st_size:,} bytes; the limit is {max_bytes:,} bytes")
    try:
        with open(p, "rb") as fh:
            return _read_stream(fh, p, st.st_size, max_bytes, max_rows)
    except OSError as e:
        raise fail("missing", f"{p} cannot be read: {e.strerror}") from None


def _read_stream(fh: io.BufferedIOBase, p: Path, size: int, max_bytes: int | None, max_rows: int | None) -> Table:
    """The file parsed, or only its start when that proves more than ``max_rows`` rows."""
    if max_rows is not None and size > _CHUNK:
        table = _prefix_with_extra_rows(fh, size, max_rows)
        if table is not None:
            return table
        fh.seek(0)
    # One read of the whole file, as a file of the right length needs: chunks joined later
    # would hold two copies at once and make every later copy of the text slower.
    raw = fh.read()
    if max_bytes is not None and len(raw) > max_bytes:  # it grew after the size check
        raise fail("too_large", f"{p} is over the limit of {max_bytes:,} bytes")
    return _parse(raw, max_rows, partial=False)


def _prefix_with_extra_rows(fh: io.BufferedIOBase, size: int, max_rows: int) -> Table | None:
    """Scan the file's newlines chunk by chunk (through one reused buffer); once there are
    enough for the header and ``max_rows + 1`` rows, parse just the start up to there. The
    table when it really holds more than ``max_rows`` rows, else None (read it all).

    A file no more than twice the size its first chunk's lines predict for the rows expected
    is not scanned further: reading it whole costs about what a valid file costs."""
    buf = bytearray(_CHUNK)
    pos = lines = retry_at = 0  # lines: newlines so far, never fewer than the complete rows
    while n := fh.readinto(buf):
        is_nl = np.frombuffer(buf, dtype=np.uint8, count=n) == 10
        here = int(np.count_nonzero(is_nl))
        if pos == 0 and here < max_rows + 2 and size <= 2 * n / max(here, 1) * (max_rows + 2):
            return None
        if lines + here >= max_rows + 2 and pos + n >= retry_at:
            ends = np.flatnonzero(is_nl)
            # First try: just past the newline that ends row max_rows + 1; later: all read so far.
            end = ends[max_rows + 1 - lines] if retry_at == 0 else ends[-1]
            fh.seek(0)
            table = _parse(fh.read(pos + int(end) + 1), max_rows, partial=True)
            if table is not None:
                return table
            retry_at = 2 * (pos + n)  # quoted newlines or blank lines fooled the count
            fh.seek(pos + n)
        lines += here
        pos += n
    return None


@overload
def _parse(raw: bytes, max_rows: int | None, partial: Literal[False]) -> Table: ...
@overload
def _parse(raw: bytes, max_rows: int | None, partial: Literal[True]) -> Table | None: ...
def _parse(raw: bytes, max_rows: int | None, partial: bool) -> Table | None:
    """Parse a whole file, or with ``partial`` the start of one cut after a newline: then the
    table is returned only if it holds more than ``max_rows`` complete rows, else None."""
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if not _CONTENT.search(raw):  # only line ends (a search, not a copy of the file)
        if partial:  # blank lines first: the rest will tell
            return None
        raise fail("empty", "the file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise fail(
            "encoding",
            f"the file is not valid UTF-8: byte {raw[e.start]:#04x} at offset "
            f"{e.start} (line {line}); save it as UTF-8",
        ) from None
    if "\0" in text:  # never in a real CSV, and parsers stop at it ("0.1\0junk" reads as 0.1)
        line = raw.count(b"\n", 0, raw.index(b"\0")) + 1
        raise fail("encoding", f"the file contains a NUL byte (line {line}); it is not a text CSV")
    if "\r" in text:
        text, raw = text.replace("\r\n", "\n"), raw.replace(b"\r\n", b"\n")
    if '"' in text or "\r" in text:
        return _read_quoted(text, max_rows, partial)
    header, cols = _read_plain(text.rstrip("\n"), raw.rstrip(b"\n"), max_rows)
    if partial and (max_rows is None or not cols or len(cols[0]) <= max_rows):
        return None
    return header, cols


def _bad_count(row: int, line: int, n_fields: int, n_header: int) -> SubmissionError:
    if n_fields == 0:
        return fail("bad_row", f"row {row} (line {line}) is blank; blank lines are only allowed at the end")
    return fail("bad_row", f"row {row} (line {line}) has {n_fields} fields, header has {n_header}")


def _read_plain(text: str, raw: bytes, max_rows: int | None) -> Table:
    """Fast path for files with no quotes and only \\n line ends (the common case)."""
    header_line, _, body = text.partition("\n")
    header = header_line.split(",")
    n = len(header)
    if not body:
        return header, [[] for _ in range(n)]
    # ',' and '\n' never occur inside a multi-byte UTF-8 sequence, so counting them in
    # the bytes counts them in the text.
    a = np.frombuffer(raw, dtype=np.uint8)[len(header_line.encode("utf-8")) + 1 :]
    ends = np.append(np.flatnonzero(a == 10), len(a))
    blank = np.diff(ends, prepend=-1) == 1
    if max_rows is not None and len(ends) - int(blank.sum()) > max_rows + 1:
        # Keep the first max_rows + 1 non-blank lines (and any blank line among them, an error).
        last = int(np.flatnonzero(~blank)[max_rows])
        ends, blank = ends[: last + 1], blank[: last + 1]
        a = a[: ends[-1]]
        body = a.tobytes().decode("utf-8")
    fields = np.diff(np.searchsorted(np.flatnonzero(a == 44), ends), prepend=0) + 1
    bad = (fields != n) | blank
    if bad.any():
        i = int(np.argmax(bad))
        raise _bad_count(i + 1, i + 2, 0 if blank[i] else int(fields[i]), n)
    # Every line has exactly n fields, so the flat split lays the cells out row-major.
    flat = body.replace("\n", ",").split(",") if n > 1 else body.split("\n")
    return header, [flat[j::n] for j in range(n)]


def _read_quoted(text: str, max_rows: int | None, partial: bool) -> Table | None:
    """RFC 4180 path: quoted fields, embedded commas or newlines, bare \\r line ends.

    With ``partial`` the text is the start of a file, whose last record may be cut inside a
    quoted field: a record counts only once another one follows it."""
    reader = csv.reader(io.StringIO(text, newline=""))
    # header + max_rows + 1 rows, and with partial one more to prove the last one complete
    limit = None if max_rows is None else max_rows + 2 + partial
    try:
        header, *rows = itertools.islice(reader, limit)
        if not all(rows):
            rows = _without_blanks(rows, reader)
    except csv.Error as e:
        raise fail("bad_row", f"line {reader.line_num} is not valid CSV: {e}") from None
    if partial:
        if max_rows is None or len(rows) <= max_rows + 1:
            return None
        rows.pop()
    n = len(header)
    if set(map(len, rows)) - {n}:  # rare: parse again to name the first bad row and its line
        reader = csv.reader(io.StringIO(text, newline=""))
        next(reader)
        for i, row in enumerate(reader, start=1):
            if len(row) != n:
                raise _bad_count(i, reader.line_num, len(row), n)
    # itemgetter per column: zip(*rows) over a million rows is several times slower
    return header, [list(map(operator.itemgetter(j), rows)) for j in range(n)]


def _without_blanks(rows: list[list[str]], reader) -> list[list[str]]:
    """``rows`` without its trailing blank lines. A blank line followed by a row (among ``rows``
    or still in ``reader``) is left in, for the field-count check to name it."""
    first = rows.index([])
    if any(rows[first:]) or next((r for r in reader if r), None) is not None:
        return rows
    return rows[:first]


def to_objects(c: Sequence[str]) -> np.ndarray:
    # Filled by hand: np.asarray(list_of_str) makes a fixed-width unicode array, and
    # letting pandas infer from lists is several times slower.
    arr = np.empty(len(c), dtype=object)
    arr[:] = c
    return arr


def to_frame(header: list[str], cols: Sequence[Any], index: pd.Index | None = None) -> pd.DataFrame:
    data = {h: c if isinstance(c, np.ndarray) else to_objects(c) for h, c in zip(header, cols)}
    return pd.DataFrame(data, index=index, copy=False)
