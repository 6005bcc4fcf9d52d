"""Reading and writing a CSV as the exact strings written: the firewall, the verifier, the
scorer's helpers and the final stage compare ids and labels as text, so "001" must stay "001"
and "NA" stay "NA".

Arrow's CSV reader does the reading, into columns of Arrow strings (pandas'
``string[pyarrow]``): on a million rows of 32 numeric columns it takes 0.6 s and about 0.3 GB,
where pandas' reader with ``dtype=str`` takes 11 s and 2 GB (a Python object per cell). Anything
Arrow's reader refuses or reads differently from pandas (a row with missing fields, a header
with empty or repeated names, bytes that are not UTF-8, an empty file) is read by pandas, as it
always was, so the result and its errors do not depend on which reader ran. A file too large to
hold is read a block at a time (``write_rows``, ``sample_rows``, ``count_rows``; ``csv_split``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
import pandas as pd

from ..core.errors import TaskError

T = TypeVar("T")

# Arrow reads blocks of this many bytes at once; 16 MB keeps a wide row inside one block.
_BLOCK_BYTES = 16 << 20
_PANDAS_BLOCK_ROWS = 100_000  # the rows of a block where pandas reads a file a block at a time
_WRITE_BLOCK_ROWS = 500_000  # the rows of a frame written at once when only some are written


class _Refused(Exception):
    """Arrow's reader refused the file: pandas reads it."""


def read_csv_exact(
    path: Path, sep: str = ",", nrows: int | None = None, usecols: Sequence[str] | None = None
) -> pd.DataFrame:
    """Read a CSV (its first ``nrows`` rows, or all; its columns ``usecols``, or all) keeping
    every value as the exact string written ("001" stays "001", "NA" stays "NA")."""
    try:
        if nrows is None and len(sep) == 1:
            try:
                return _read_arrow(path, sep, usecols)
            except _Refused:
                pass
        columns = None if usecols is None else list(usecols)
        return pd.read_csv(
            path, dtype=str, keep_default_na=False, index_col=False, sep=sep, nrows=nrows, usecols=columns
        )
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise _unreadable(path, exc) from exc


def _unreadable(path: Path, exc: Exception) -> TaskError:
    return TaskError(
        f"cannot read {path} as CSV: {exc}", f"check {path}: one header row, the same number of fields in every row"
    )


def _read_arrow(path: Path, sep: str, usecols: Sequence[str] | None) -> pd.DataFrame:
    """The file as Arrow string columns; _Refused where pandas must read it (see above)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = _header(path, sep)
    names = header if usecols is None else [name for name in header if name in set(usecols)]
    if usecols is not None and len(names) != len(set(usecols)):
        raise _Refused  # a column the file lacks: pandas says which
    try:
        table = pacsv.read_csv(path, **_arrow_options(header, names, sep))
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise _Refused from exc
    return _frame(table, names)


def _frame(table: Any, names: list[str]) -> pd.DataFrame:
    """An Arrow table (or record batch) of text as a frame of ``string[pyarrow]`` columns."""
    import pyarrow as pa

    dtype = pd.StringDtype("pyarrow")
    columns = {}
    for name in names:
        column = table.column(name)
        chunks = pa.chunked_array(column.chunks if isinstance(column, pa.ChunkedArray) else [column], pa.large_string())
        columns[name] = pd.Series(pd.arrays.ArrowStringArray(chunks), dtype=dtype, copy=False)
    return pd.DataFrame(columns, columns=names)


def select_rows(frame: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """``frame[mask]`` with a fresh index, its Arrow string columns filtered by Arrow itself
    (no cast copy of a whole column on the way, which the rows found by ``rows_where`` from a
    column of ten million ids would cost)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pa.array(np.asarray(mask, dtype=bool))
    columns = {}
    for i in range(len(frame.columns)):  # by place: a repeated name is one column each
        values = frame.iloc[:, i]
        arrow = _arrow_strings(values)
        if arrow is None:
            columns[i] = values[np.asarray(mask, dtype=bool)].reset_index(drop=True)
        else:
            filtered = pd.arrays.ArrowStringArray(pc.filter(arrow, keep))
            columns[i] = pd.Series(filtered, dtype=values.dtype, copy=False)
    selected = pd.DataFrame(columns, copy=False)
    selected.columns = frame.columns
    return selected


def _arrow_strings(values: pd.Series) -> Any:
    """The Arrow array under a ``string[pyarrow]`` column, or None for any other column.
    (``__arrow_array__`` would hand over a copy cast to 32-bit offsets.)"""
    if not (isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"):
        return None
    held = getattr(values.array, "_pa_array", None)  # pandas' own, where it has it
    return values.array.__arrow_array__() if held is None else held


def _header(path: Path, sep: str = ",") -> list[str]:
    """The column names as pandas reads them; _Refused unless Arrow names them the same way (no
    empty or repeated name)."""
    header = pd.read_csv(path, dtype=str, nrows=0, index_col=False, sep=sep).columns.tolist()
    if len(set(header)) != len(header) or any(not name or name.startswith("Unnamed: ") for name in header):
        raise _Refused
    return header


def _arrow_options(header: list[str], names: list[str], sep: str = ",") -> dict[str, Any]:
    """Arrow's reading options that keep every value of ``names`` as the text written (as large
    strings, which pandas would otherwise copy them into)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    return {
        "read_options": pacsv.ReadOptions(block_size=_BLOCK_BYTES),
        "parse_options": pacsv.ParseOptions(delimiter=sep, newlines_in_values=True),
        "convert_options": pacsv.ConvertOptions(
            column_types={name: pa.large_string() for name in header},
            include_columns=names,
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        ),
    }


def _blocks(path: Path, arrow: bool, sep: str = ",") -> Iterator[pd.DataFrame]:
    """The file's rows, a block at a time, as exact strings: by Arrow (``arrow``), raising
    _Refused where it must not read the file, or by pandas."""
    if not arrow:
        try:
            yield from pd.read_csv(
                path, dtype=str, keep_default_na=False, index_col=False, sep=sep, chunksize=_PANDAS_BLOCK_ROWS
            )
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            raise _unreadable(path, exc) from exc
        return
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = _header(path, sep)
    try:
        for batch in pacsv.open_csv(path, **_arrow_options(header, header, sep)):
            yield _frame(batch, header)
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise _Refused from exc


def each_block(path: Path, visit: Callable[[Iterator[pd.DataFrame]], T], sep: str = ",") -> T:
    """``visit(blocks)``, where ``blocks`` are the rows of the CSV ``path`` a block at a time, as
    exact strings: read by Arrow, and read again from the start by pandas where Arrow refuses
    the file part way through (so ``visit`` starts afresh on each call: it opens its outputs for
    writing and counts from zero)."""
    for arrow in (True, False):
        try:
            return visit(_blocks(path, arrow, sep))
        except _Refused:
            continue
    raise AssertionError("pandas reads every file Arrow refuses")


def changed_while_read(source: Path) -> TaskError:
    """The error for a file whose rows changed while it was read a block at a time."""
    return TaskError(f"{source} changed while it was read", "start the run again")


def write_rows(source: Path, keep: np.ndarray, dest: Path | None, take: np.ndarray | None = None) -> pd.DataFrame:
    """Write the rows of the CSV ``source`` where ``keep`` holds to ``dest`` (None: nowhere), as
    ``write_csv_exact`` would write them, a block at a time (so a file of any length costs the
    memory of a block); return the rows where ``take`` holds, as exact strings."""

    def visit(blocks: Iterator[pd.DataFrame]) -> pd.DataFrame:
        taken: list[pd.DataFrame] = []
        with open(os.devnull if dest is None else dest, "wb") as out:
            start, began = 0, False
            for block in blocks:
                end = start + len(block)
                if end > len(keep):
                    raise changed_while_read(source)
                if dest is not None:
                    append_block(select_rows(block, keep[start:end]), out, header=not began)
                if take is not None:
                    taken.append(select_rows(block, take[start:end]))
                start, began = end, True
            if not began:  # no rows: the header alone
                out.write(pd.read_csv(source, dtype=str, nrows=0, index_col=False).to_csv(index=False).encode())
        if start != len(keep):
            raise changed_while_read(source)
        if not taken:
            return pd.read_csv(source, dtype=str, nrows=0, index_col=False)
        return pd.concat(taken, ignore_index=True)

    return each_block(source, visit)


def append_rows(frame: pd.DataFrame, path: Path) -> None:
    """Add the rows of ``frame`` to the end of the CSV ``path`` (no header), as
    ``write_csv_exact`` writes rows; ``frame`` has the file's columns, in its order."""
    with open(path, "ab") as out:
        if len(frame):
            append_block(frame, out, header=False)


def append_block(block: pd.DataFrame, out: IO[bytes], header: bool) -> None:
    """Write ``block`` to the open file ``out`` as ``write_csv_exact`` writes a frame (with the
    header row when ``header``)."""
    text = io.BytesIO()
    if len(block.columns) < 2 or not _write_arrow(block, text, header):
        text = io.BytesIO()
        block.to_csv(text, index=False, header=header)
    out.write(text.getvalue())


def write_csv_exact(frame: pd.DataFrame, path: Path, rows: np.ndarray | None = None) -> None:
    """``frame.to_csv(path, index=False)``, the same bytes, written by Arrow's CSV writer where
    it can write them: a frame of two or more columns of text none of whose values needs
    quoting (pandas spends 20 s on a million rows of 32 text columns, Arrow under one). Any
    other frame is written by pandas. ``rows``: write only those (a boolean mask), a block at a
    time, with no copy of them all."""
    if rows is not None:
        with open(path, "wb") as out:
            for start in range(0, max(len(frame), 1), _WRITE_BLOCK_ROWS):
                end = start + _WRITE_BLOCK_ROWS
                append_block(select_rows(frame.iloc[start:end], rows[start:end]), out, header=start == 0)
        return
    if len(frame.columns) >= 2:
        with open(path, "wb") as out:
            if _write_arrow(frame, out, header=True):
                return
    frame.to_csv(path, index=False)  # (over what Arrow began to write)


def _write_arrow(frame: pd.DataFrame, out: IO[bytes], header: bool) -> bool:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return False
    if not all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in table.schema.types):
        return False
    if header:
        out.write(frame.head(0).to_csv(index=False).encode())  # pandas' header, quoted as pandas quotes it
    try:
        pacsv.write_csv(table, out, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    except pa.ArrowInvalid:  # a value holding a comma, a quote or a line break: pandas quotes it
        return False
    return True


@dataclass
class RowSample:
    rows: pd.DataFrame  # the sampled rows, typed as pd.read_csv types them
    count: int  # the rows of the whole file
    whole: pd.DataFrame  # the columns asked for in full, as exact strings


def sample_rows(path: Path, rows: int, seed: int, whole: Sequence[str] = ()) -> RowSample | None:
    """A seeded random sample of about ``rows`` rows of a CSV, typed as ``pd.read_csv`` types
    them, with the file's exact row count and its columns ``whole`` in full (exact strings).
    Arrow reads the file a block at a time, so a file of any length costs the memory of one
    block, the sample and the whole columns. None where Arrow's reader refuses the file: the
    caller reads it with pandas."""
    rng = np.random.default_rng(seed)
    size = max(1, path.stat().st_size)
    picked: list[pd.DataFrame] = []
    columns: list[pd.DataFrame] = []
    count, share = 0, -1.0
    try:
        for block in _blocks(path, arrow=True):
            if share < 0:  # the first block tells the bytes of a row, so the rows of the file
                per_row = max(1.0, _text_bytes(block) / max(1, len(block)))
                share = min(1.0, rows / (size / per_row))
            picked.append(select_rows(block, rng.random(len(block)) < share))
            columns.append(block[list(whole)])
            count += len(block)
    except _Refused:
        return None
    if not picked:
        return None
    text = io.BytesIO()  # the sample typed by pandas' own reader, as the whole file would be
    append_block(pd.concat(picked, ignore_index=True), text, header=True)
    text.seek(0)
    typed = pd.read_csv(text, low_memory=False)
    return RowSample(typed, count, pd.concat(columns, ignore_index=True))


def _text_bytes(block: pd.DataFrame) -> float:
    """About the bytes ``block`` takes in a CSV file: its values and a separator each."""
    return float(sum(block[c].str.len().sum() + len(block) for c in block.columns))


def count_rows(path: Path) -> int | None:
    """The data rows of a CSV as a CSV reader counts them (a quoted field may hold line
    breaks), read by Arrow a block at a time converting one column; None where Arrow refuses
    the file."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        header = _header(path)
        reader = pacsv.open_csv(path, **_arrow_options(header, header[:1]))
        return sum(batch.num_rows for batch in reader)
    except (_Refused, pa.ArrowException, UnicodeDecodeError):
        return None


def rows_where(path: Path, column: str, values: set[str]) -> pd.DataFrame:
    """The rows of the CSV ``path`` whose ``column`` holds one of ``values``, as exact strings;
    the file's header with no rows where it has no such column. The column is read first, alone:
    only a file with such rows is read again, a block at a time, for them (a file of any
    length costs the memory of that column, a block and the rows found)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    header = read_csv_exact(path, nrows=0)
    if column not in header.columns:
        return header
    keys = read_csv_exact(path, usecols=[column])[column]
    arrow = _arrow_strings(keys)
    if arrow is not None:
        wanted = pa.array(list(values), pa.large_string())  # one lookup set (pandas' isin makes one per call)
        hit = np.asarray(pc.is_in(arrow, value_set=wanted), dtype=bool)
    else:
        hit = keys.isin(values).to_numpy(dtype=bool)
    if not hit.any():
        return header
    return write_rows(path, np.zeros(len(hit), dtype=bool), None, take=hit)
