"""Lookup tables: tables beside train and test that add columns to their rows through a key.

Multi-table competitions ship them (a product's attributes keyed by product id, a customer's
past loans keyed by customer id, the weather keyed by airport and hour). Here a table is
measured against the train and test rows: which column(s) of theirs hold its key, how many of
their rows find a match, and whether the key names one row of the table (one-to-one: its
columns join as they are) or several (one-to-many: the rows are summarised per key). Inference
finds the key (``find_join``); a task's ``tables:`` names it, and a run measures it again on
the workspace files (``measure_tables``) for the brief and every prompt.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd

from .spec import LookupTable

MIN_OVERLAP = 0.5  # a key matches at least this share of the train rows, or it is no key
_SAMPLE_ROWS = 20_000  # train and test rows a key is tried on: enough to measure overlap
_MIN_RENAMED_VALUES = 10  # a key named otherwise must match this many distinct values
_MAX_SHARED = 8  # columns shared by name tried in pairs (beyond that, singly and all together)
_SEP = "\x1f"  # joins the parts of a key of several columns into one text


@dataclass
class TableJoin:
    """A lookup table and how it joins the rows of train and test."""

    file: str
    key: list[str]  # the table's columns
    on: list[str]  # the train and test columns, in key's order
    rows: int
    columns: int  # besides the key
    numeric: int  # of those columns
    unique: bool  # one table row per key: one-to-one
    train_overlap: float  # share of train rows whose key is in the table
    test_overlap: float | None = None

    @property
    def relation(self) -> str:
        return "one-to-one" if self.unique else "one-to-many"

    def spec(self) -> LookupTable:
        return LookupTable(file=self.file, key=self.key, train_key=None if self.on == self.key else self.on)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "relation": self.relation}

    def words(self) -> str:
        """One sentence: the table, its key and how it joins (for notes, the brief and prompts)."""
        return table_words(self.to_dict())


def table_words(join: dict[str, Any]) -> str:
    """``TableJoin.words`` from its dict (as a run's profile keeps it)."""
    key = ", ".join(join["key"])
    on = "" if join["on"] == join["key"] else f" (train and test column {', '.join(join['on'])})"
    text = join["columns"] - join["numeric"]
    how = (
        "one row per key (one-to-one): its columns join as they are"
        if join["unique"]
        else "several rows per key (one-to-many): summarise them per key (count, mean/min/max, distinct values)"
    )
    test = "" if join.get("test_overlap") is None else f", {join['test_overlap']:.0%} of test rows"
    return (
        f"{join['file']} ({join['rows']:,} rows; {join['columns']} columns: {join['numeric']} numeric, {text} text) "
        f"keyed by {key}{on}, {how}; matches {join['train_overlap']:.0%} of train rows{test}"
    )


def read_table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, low_memory=False)


def read_rows(path: Path) -> pd.DataFrame:
    """The first rows of a train or test file, enough to measure a key on."""
    return pd.read_csv(path, nrows=_SAMPLE_ROWS, low_memory=False)


def key_text(values: pd.Series) -> pd.Series:
    """A key column as text that matches across files, value by value: a whole number as its
    digits alone (a column with a missing value reads as floats, "7.0", where another file has
    "7"; an id read as text keeps "007" where another file's numbers have 7); "" is missing."""
    text = values.astype(str).str.strip()
    present = values.notna() & (text != "")
    whole = present & text.str.fullmatch(r"-?\d+(\.0*)?")
    text = text.where(~whole, text[whole].map(_digits))
    return text.where(present, None)


def _digits(value: str) -> str:
    return str(int(value.split(".", 1)[0]))


def key_values(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One text per row for the key ``columns`` (missing where any part is)."""
    parts = [key_text(frame[c]) for c in columns]
    return parts[0] if len(parts) == 1 else parts[0].str.cat(parts[1:], sep=_SEP)


def _overlap(rows: pd.DataFrame, on: list[str], keys: set) -> float:
    if not len(rows):
        return 0.0
    return float(key_values(rows, on).isin(keys).mean())


def measure(
    file: str, table: pd.DataFrame, key: list[str], on: list[str], train: pd.DataFrame, test: pd.DataFrame | None
) -> TableJoin:
    """How ``table`` joins ``train`` and ``test`` on ``key`` (its columns) = ``on`` (theirs)."""
    keys = key_values(table, key)
    present = set(keys.dropna())
    rest = [c for c in table.columns if c not in key]
    numeric = sum(pd.api.types.is_numeric_dtype(table[c]) for c in rest)
    return TableJoin(
        file=file,
        key=list(key),
        on=list(on),
        rows=len(table),
        columns=len(rest),
        numeric=numeric,
        unique=not keys.dropna().duplicated().any(),
        train_overlap=round(_overlap(train, on, present), 4),
        test_overlap=None if test is None else round(_overlap(test, on, present), 4),
    )


def find_join(
    file: str, table: pd.DataFrame, train: pd.DataFrame, skip: set[str] | frozenset[str] = frozenset()
) -> TableJoin | None:
    """The key by which ``table`` joins ``train``'s rows, or None when none matches at least
    MIN_OVERLAP of them. Columns shared by name are tried first, alone, in pairs and all
    together: a key naming one table row wins, then the fewest columns, then the widest match.
    Failing those, a text column of the table naming one row each whose values fill a text
    column of train under another name (airports' ``faa`` and flights' ``dest``); numbers named
    differently are not tried, as small whole numbers overlap by chance. ``skip``: train
    columns that are no key (the targets)."""
    shared = [c for c in table.columns if c in train.columns and c not in skip]
    tried: list[list[str]] = [[c] for c in shared]
    if len(shared) <= _MAX_SHARED:
        tried += [list(pair) for pair in combinations(shared, 2)]
    if len(shared) > 2:
        tried.append(shared)
    found = [measure(file, table, key, key, train, None) for key in tried]
    found = [j for j in found if j.train_overlap >= MIN_OVERLAP]
    if found:
        return min(found, key=lambda j: (not j.unique, len(j.key), -j.train_overlap))
    return _renamed_key(file, table, train, skip)


def _renamed_key(
    file: str, table: pd.DataFrame, train: pd.DataFrame, skip: set[str] | frozenset[str]
) -> TableJoin | None:
    best: tuple[int, TableJoin] | None = None
    for key in table.columns:
        values = table[key]
        if pd.api.types.is_numeric_dtype(values) or values.dropna().duplicated().any():
            continue
        present = set(key_text(values).dropna())
        for on in train.columns:
            if on in skip or on in table.columns or pd.api.types.is_numeric_dtype(train[on]):
                continue
            train_keys = key_text(train[on])
            matched = train_keys[train_keys.isin(present)]
            if len(train) and len(matched) / len(train) >= MIN_OVERLAP and matched.nunique() >= _MIN_RENAMED_VALUES:
                join = measure(file, table, [key], [on], train, None)
                if best is None or matched.nunique() > best[0]:
                    best = (int(matched.nunique()), join)
    return None if best is None else best[1]


def measure_tables(data_dir: Path, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Each table the task names, measured on the files in ``data_dir`` (a run's workspace):
    its size, key, relation and the share of train and test rows it matches."""
    if not spec.get("tables"):
        return []
    train = read_rows(data_dir / spec["train_file"])
    test_path = data_dir / spec["test_file"]
    test = read_rows(test_path) if test_path.is_file() else None
    measured = []
    for entry in spec["tables"]:
        table = LookupTable.model_validate(entry)
        frame = read_table(data_dir / table.file)
        measured.append(measure(table.file, frame, table.key, table.join_columns, train, test).to_dict())
    return measured


def table_lines(tables: list[dict[str, Any]]) -> list[str]:
    """The brief's and the prompts' lines on the lookup tables (none: no lines)."""
    if not tables:
        return []
    lines = [f"- {table_words(t)}" for t in tables]
    lines.append(
        "- These tables hold no labels: join them to train, holdout and test rows alike by their keys, "
        "before building features (a left join keeps every row; a key with no match leaves its columns empty)"
    )
    return lines
