"""Parquet copies of a large table's CSV files, typed and narrowed, for the scripts that read them.

A script reading a ten-million-row CSV with pandas spends a minute parsing it and holds every
number as a 64-bit float; the same table in Parquet reads in seconds, at half the memory when
its numbers are 32-bit. The CSV stays the contract (its exact text: ids such as "007"); a
Parquet copy beside it (``train.parquet`` beside ``train.csv``) holds the same rows, typed:

- a column every value of which is an integer becomes the narrowest integer type that holds
  them all (``int8`` to ``int64``), when none is missing;
- a column every value of which is a number becomes ``float32`` (about seven significant
  digits: the CSV keeps the exact values);
- any other column, and every column named ``text`` (ids, labels, keys), stays text.

pandas' spellings of a missing value ("", "NA", "nan", ...) are missing in every column, as
``pandas.read_csv`` reads them, so a script reads the same frame from either file but for the
number types. The types are decided over every file of a folder at once (``write_parquet``),
so a column is typed alike in the training, holdout and test files. Files are read a block at
a time: memory is a block's, whatever the length of the table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import TaskError
from .exact_csv import read_csv_exact

_BLOCK_BYTES = 16 << 20
# pandas.read_csv's default missing-value spellings (pandas._libs.parsers.STR_NA_VALUES).
MISSING = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)  # fmt: skip
_INTS = ("int8", "int16", "int32", "int64")


def parquet_of(csv: Path) -> Path:
    """The Parquet copy of ``csv`` (``train.csv`` -> ``train.parquet``)."""
    return csv.with_suffix(".parquet")


def column_types(paths: Sequence[Path], text: Iterable[str] = ()) -> dict[str, Any]:
    """The Arrow type of every column of the CSV files ``paths``, decided over all their rows
    (see the module docstring); ``text``: columns kept as text whatever they hold."""
    import pyarrow as pa

    kept = set(text)
    state: dict[str, list[Any]] = {}  # column -> [kind ("int", "float", "text"), low, high]
    for path in paths:
        for batch in _batches(path):
            for name in batch.schema.names:
                found = state.setdefault(name, ["text" if name in kept else "int", None, None])
                if found[0] != "text":
                    _observe(found, batch.column(name))
    types: dict[str, Any] = {}
    for name, (kind, low, high) in state.items():
        if kind == "int" and low is not None:
            types[name] = next(getattr(pa, t)() for t in _INTS if np.iinfo(t).min <= low and high <= np.iinfo(t).max)
        elif kind in ("int", "float") and low is not None:
            types[name] = pa.float32()
        else:  # text, or a column with no value at all
            types[name] = pa.string()
    return types


def _observe(found: list[Any], column: Any) -> None:
    """Narrow ``found`` (a column's kind and range so far) by one block of its values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = pc.is_in(column, value_set=pa.array(MISSING))
    values = pc.filter(column, pc.invert(missing))
    if found[0] == "int":
        try:
            numbers = pc.cast(values, pa.int64())
            if pc.any(missing).as_py():
                found[0] = "float"  # a missing value: pandas reads the column as floats
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not every value is an integer
            found[0] = "float"
    if found[0] == "float":
        try:
            numbers = pc.cast(values, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not every value is a number
            found[0] = "text"
            return
    if len(numbers):
        low, high = pc.min(numbers).as_py(), pc.max(numbers).as_py()
        found[1] = low if found[1] is None else min(found[1], low)
        found[2] = high if found[2] is None else max(found[2], high)


def write_parquet(csv: Path, types: Mapping[str, Any], dest: Path | None = None) -> Path:
    """Write the rows of ``csv`` as Parquet with the column ``types`` (``column_types``) to
    ``dest`` (by default ``parquet_of(csv)``), a block at a time; return where. A TaskError
    when a value does not fit its column's type (a table changed since the types were read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    dest = dest or parquet_of(csv)
    partial = dest.with_name(f".{dest.name}.partial")
    try:
        schema = pa.schema([(name, types[name]) for name in _header_names(csv)])
        with pq.ParquetWriter(partial, schema) as writer:  # a header and no rows: no row group
            for batch in _batches(csv):
                writer.write_batch(_typed(batch, schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
        # a value that does not fit its type, or a column ``types`` does not name
        partial.unlink(missing_ok=True)
        raise TaskError(f"cannot write {csv.name} as Parquet: {exc}", "start a new run from the task folder") from exc
    os.replace(partial, dest)
    return dest


def parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def refresh_parquet(csv: Path) -> None:
    """After ``csv`` was rewritten in a copy of a data folder: its Parquet copy, where it has
    one, written again with the same types; where a value no longer fits them, every Parquet
    copy of the folder removed instead (scripts then read the CSV files, all alike)."""
    parquet = parquet_of(csv)
    if not parquet.exists():
        return
    import pyarrow.parquet as pq

    schema = pq.read_schema(parquet)
    types = {name: schema.field(name).type for name in schema.names}
    try:
        write_parquet(csv, types)
    except TaskError:
        for path in csv.parent.glob("*.parquet"):
            path.unlink()


def write_rows_parquet(source: Path, keep: np.ndarray, dest: Path) -> None:
    """The rows of the Parquet file ``source`` where ``keep`` holds, to ``dest``, a batch at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = pq.ParquetFile(source)
    with pq.ParquetWriter(dest, file.schema_arrow) as writer:
        start = 0
        for batch in file.iter_batches(batch_size=500_000):
            end = start + batch.num_rows
            writer.write_batch(batch.filter(pa.array(keep[start:end])))
            start = end


def _batches(path: Path) -> Iterator[Any]:
    """The CSV's rows a block at a time, every column as text (TaskError where Arrow cannot read it)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = _header_names(path)
    options = pacsv.ConvertOptions(
        column_types={name: pa.string() for name in names},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    try:
        yield from pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=_BLOCK_BYTES),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=options,
        )
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise TaskError(f"cannot read {path.name} for its Parquet copy: {exc}", "check the file is UTF-8 CSV") from exc


def _header_names(path: Path) -> list[str]:
    return [str(c) for c in read_csv_exact(path, nrows=0).columns]


def _typed(batch: Any, schema: Any) -> Any:
    """A block of text columns as ``schema``'s types, pandas' missing spellings missing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for field in schema:
        column = batch.column(field.name)
        missing = pc.is_in(column, value_set=pa.array(MISSING))
        column = pc.if_else(missing, pa.scalar(None, pa.string()), column)
        if pa.types.is_floating(field.type):
            column = pc.cast(pc.cast(column, pa.float64()), field.type, safe=False)
        elif pa.types.is_integer(field.type):
            column = pc.cast(pc.cast(column, pa.int64()), field.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)
