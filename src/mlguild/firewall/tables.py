"""A task's lookup tables in the workspace: copied, less any column that carries a label.

A table joins the train rows by a key (``TaskSpec.tables``), the holdout's rows included: a
column of it that equals a target on every row it matches would hand a script the holdout's
labels. Such a column (or one named as a target) is dropped from the workspace's copy, and the
manifest says which; the rest of the table is an input like any other.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from ..task.folder import Task
from ..task.lookup import key_values
from ..task.spec import LookupTable
from ..util.exact_csv import read_csv_exact, write_csv_exact
from .copies import copied_columns

_MIN_MATCHED = 10  # fewer matched rows say nothing about whether a column copies the label


def label_columns(table: pd.DataFrame, spec: LookupTable, train: pd.DataFrame, targets: list[str]) -> list[str]:
    """The columns of ``table`` named as a target, or equal to one on every train row the table
    matches (one table row per key: a one-to-one join)."""
    found = [c for c in table.columns if c in targets and c not in spec.key]
    keys = key_values(table, spec.key)
    if keys.dropna().duplicated().any():
        return found
    rows = table.assign(_key=keys).dropna(subset=["_key"]).set_index("_key")
    matched = key_values(train, spec.join_columns)
    hit = matched.isin(rows.index)
    if hit.sum() < _MIN_MATCHED:
        return found
    joined = rows.loc[matched[hit]].reset_index(drop=True)
    columns = [c for c in joined.columns if c not in spec.key and c not in found]
    for target in targets:
        truth = train.loc[hit.to_numpy(), target].reset_index(drop=True)
        if truth.nunique() < 2:
            continue
        found += [c for c in copied_columns(joined[columns], truth) if c not in found]
    return found


def copy_table(task: Task, spec: LookupTable, train: pd.DataFrame, dest: Path) -> list[str]:
    """Copy the table ``spec`` into ``dest``; the columns dropped because they carry a label."""
    src = task.public_dir / spec.file
    table = read_csv_exact(src)
    dropped = label_columns(table, spec, train, task.spec.target_columns)
    if dropped:
        write_csv_exact(table.drop(columns=dropped), dest)
    else:
        shutil.copyfile(src, dest)
    return dropped
