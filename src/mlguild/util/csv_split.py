"""One CSV written into several files a block at a time (a task's train and test rows from one
labelled table): a file of any length costs the memory of a block and the columns taken, and
every file holds the bytes ``exact_csv.write_csv_exact`` would write."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .exact_csv import append_block, changed_while_read, each_block, select_rows


@dataclass
class RowsOut:
    """A file ``split_rows`` writes: the source's rows where ``rows`` holds (None: every row),
    less the columns ``drop``; ``take`` names the columns of those rows it returns."""

    dest: Path
    rows: np.ndarray | None = None
    drop: tuple[str, ...] = ()
    take: tuple[str, ...] = ()


def split_rows(
    source: Path, outputs: Sequence[RowsOut], sep: str = ",", numbers: tuple[str, int] | None = None
) -> list[pd.DataFrame]:
    """Write each of ``outputs`` from the CSV ``source`` (separated by ``sep``) a block at a
    time, as ``write_csv_exact`` writes a frame, so that a file of any length costs the memory
    of a block and the columns taken; return each output's ``take`` columns. ``numbers``:
    (name, first): each written row gets a first column ``name`` holding its number, counted
    from ``first`` over the rows written to any output, in the file's order."""
    import pyarrow as pa

    def visit(blocks: Iterator[pd.DataFrame]) -> list[pd.DataFrame]:
        taken: list[list[pd.DataFrame]] = [[] for _ in outputs]
        with ExitStack() as stack:
            files = [stack.enter_context(open(output.dest, "wb")) for output in outputs]
            start, numbered, began = 0, 0, False
            for block in blocks:
                end = start + len(block)
                chosen = [_rows_of(output.rows, start, end, source) for output in outputs]
                if numbers is not None:
                    written = np.logical_or.reduce(chosen) if chosen else np.zeros(len(block), dtype=bool)
                    values = np.zeros(len(block), dtype=np.int64)
                    values[written] = numbers[1] + numbered + np.arange(int(written.sum()))
                    numbered += int(written.sum())
                    block.insert(0, numbers[0], pd.arrays.ArrowStringArray(pa.array(values).cast(pa.string())))
                for output, rows, out, kept in zip(outputs, chosen, files, taken, strict=True):
                    part = select_rows(block, rows)
                    if output.take:
                        kept.append(part[list(output.take)])
                    append_block(part.drop(columns=list(output.drop)), out, header=not began)
                start, began = end, True
            for output, out in zip(outputs, files, strict=True):
                if output.rows is not None and start != len(output.rows):
                    raise changed_while_read(source)
                if not began:  # no rows: the header alone
                    header = pd.read_csv(source, dtype=str, nrows=0, index_col=False, sep=sep)
                    if numbers is not None:
                        header.insert(0, numbers[0], pd.Series([], dtype=str))
                    out.write(header.drop(columns=list(output.drop)).to_csv(index=False).encode())
        return [
            pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=list(output.take))
            for output, kept in zip(outputs, taken, strict=True)
        ]

    return each_block(source, visit, sep)


def _rows_of(rows: np.ndarray | None, start: int, end: int, source: Path) -> np.ndarray:
    """The part of a mask over a file's rows that covers the block ``start:end``."""
    if rows is None:
        return np.ones(end - start, dtype=bool)
    if end > len(rows):
        raise changed_while_read(source)
    return np.asarray(rows[start:end], dtype=bool)
