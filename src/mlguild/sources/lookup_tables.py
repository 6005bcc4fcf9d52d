"""Which extra CSV files of a competition folder are lookup tables, for ``infer``.

A folder of several tables (Home Credit's bureau tables, H&M's articles and customers beside
its transactions) has more CSV files than train, test and the sample submission. A file that
joins the train rows by a key column and shares few of their columns is a lookup table, not a
candidate for the test file; a test file holds the train file's inputs, so it shares most of
them. The key itself is found by ``mlguild.task.lookup.find_join``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..task.lookup import TableJoin, find_join, measure, read_rows, read_table
from ..task.spec import LookupTable
from .tables import other_form

_TEST_SHARE = 0.5  # a file holding at least this share of train's columns may be the test file
_HEAD_ROWS = 1000  # rows of a file read to tell whether it can join at all, before all of it is


def set_tables_aside(others: list[Path], data_dir: Path, train_path: Path) -> tuple[list[Path], dict[Path, TableJoin]]:
    """(the files left to be the test file, the lookup tables among ``others`` with their joins)."""
    tables: dict[Path, TableJoin] = {}
    if other_form(train_path):  # JSON, tab-separated or zipped: these reads see CSVs only (nothing to join)
        return others, tables
    if (train := _readable(train_path, read_rows)) is None:
        return others, tables  # an unreadable train file is said so later, by infer
    for path in others:
        if path.parent != train_path.parent or other_form(path):
            continue  # a table lies beside the train file (not among a folder of per-row files), a CSV
        head = _readable(path, lambda p: pd.read_csv(p, nrows=_HEAD_ROWS, low_memory=False))
        if head is None:
            continue
        shared = [c for c in head.columns if c in train.columns]
        if len(shared) >= _TEST_SHARE * len(train.columns) or not set(head.columns) - set(train.columns):
            continue  # it holds train's inputs: a test file, not a table
        if not shared and all(pd.api.types.is_numeric_dtype(head[c]) for c in head.columns):
            continue  # no column in common and no text codes: it cannot join (read no further)
        table = _readable(path, read_table)
        join = None if table is None else find_join(path.relative_to(data_dir).as_posix(), table, train)
        if join is not None:
            tables[path] = join
    return [p for p in others if p not in tables], tables


def _readable(path: Path, read: Callable[[Path], pd.DataFrame]) -> pd.DataFrame | None:
    """``read(path)``, or None for a file that is empty or not a CSV: no table, and not this
    module's to judge (infer says what is wrong with a train or test file)."""
    try:
        return read(path)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None


def table_specs(
    tables: dict[Path, TableJoin], train_path: Path, test_path: Path, targets: list[str], notes: list[str]
) -> list[LookupTable]:
    """The tables of the task, measured on train and test; a table keyed on a target is no
    lookup table (it would hold labels), and is said so."""
    if not tables:  # nothing to measure (and train or test may be a table read otherwise: TSV, JSON)
        return []
    train, test = read_rows(train_path), read_rows(test_path)
    specs = []
    for path, join in tables.items():
        if set(join.on) & set(targets) or any(c not in test.columns for c in join.on):
            notes.append(f"{join.file} joins on {join.on}, which the test rows lack or which is a target: not a table")
            continue
        measured = measure(join.file, read_table(path), join.key, join.on, train, test)
        notes.append(f"lookup table {measured.words()}")
        specs.append(measured.spec())
    return specs


def unused_note(leftover: list[Path], data_dir: Path) -> list[str]:
    """A note per extra CSV that is neither train, test, sample nor a table: copied, not joined."""
    return [
        f"{p.relative_to(data_dir).as_posix()} joins the train rows by no key column: not a lookup table "
        "(copied into the workspace as it is)"
        for p in leftover
    ]
