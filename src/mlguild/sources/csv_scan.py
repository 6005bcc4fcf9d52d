"""One pass over a labelled CSV, a block at a time: its row count, the columns the task's
decisions need (the target, the id candidates, the dates) in full, and the mean length of every
column's values on the labelled rows. A table of ten million rows costs those columns and one
block, never the whole table (issue 40)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..util.exact_csv import each_block, select_rows
from ..util.frames import length_totals, means_of


@dataclass
class Scan:
    rows: int  # the file's data rows
    columns: pd.DataFrame  # the columns kept, every row, as exact strings
    lengths: dict[str, float]  # each column's mean value length on the labelled rows


def scan_csv(path: Path, sep: str, keep: list[str], target: str) -> Scan:
    """Read ``path`` (separated by ``sep``) once: its columns ``keep`` in full, and the mean
    length of each column's values on the rows whose ``target`` is filled."""

    def visit(blocks: Iterator[pd.DataFrame]) -> Scan:
        kept: list[pd.DataFrame] = []
        totals: dict[str, tuple[float, int]] = {}
        rows = 0
        for block in blocks:
            labelled = (block[target] != "").to_numpy(dtype=bool)
            kept.append(block[keep])
            part = block if labelled.all() else select_rows(block, labelled)
            for name, (total, count) in length_totals(part, list(block.columns)).items():
                before = totals.get(name, (0.0, 0))
                totals[name] = (before[0] + total, before[1] + count)
            rows += len(block)
        columns = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=keep)
        return Scan(rows, columns, {name: means_of(total) for name, total in totals.items()})

    return each_block(path, visit, sep)
