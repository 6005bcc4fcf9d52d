"""A folder whose tables hold one record per sequence, each record's targets as lists of one value
per position, and whose sample submission asks for one row per position, its id the record's id
and the position joined by ``_`` (stanford-covid-vaccine: each record of train.json is an RNA
molecule whose ``reactivity`` and four more lists hold the values of its first ``seq_scored``
positions; the sample's ``id_seqpos`` is ``id_001f94081_0``, ``id_001f94081_1``, ... over every
position of each test record).

Such a folder is read as one row per position (``PositionRows``): the sample's id, the record's
id column and ``position``, the record's other values that the test records hold too (its
numbers and labels; not its lists: those are the targets, and the train records' other lists,
measurement errors, are values the test records lack), and of each text column that spells one
character per position (the sequence, its structure), the character at the position and the
``CONTEXT`` characters either side (``sequence_m1``, ``sequence_p1``, ...; empty past the ends):
a position's neighbours are most of what is known of it. The train rows are the positions the
target lists cover; the test rows are those the sample lists. The converted task folder holds
these tables (sources/convert_folder). Files named by the records' ids (stanford-covid-vaccine's
``bpps/<id>.npy``, a matrix per molecule) are not read as the rows' files: a row is a position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import TaskError

CONTEXT = 3  # characters either side of a position, each a column
POSITION = "position"
_PROBE = 200  # records (and sample ids) probed to read the layout
_JOIN = "_"


def _listed(value: str) -> list | None:
    """The JSON list a cell holds (tables write a JSON list as its text), else None."""
    if not value.startswith("["):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, list) else None


def _numbers(value: str) -> list[float] | None:
    """The list of numbers a cell holds, else None."""
    values = _listed(value)
    if values is None or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    return [float(v) for v in values]


def _split_id(ids: pd.Series) -> tuple[pd.Series, pd.Series] | None:
    """Each id's record and position (``id_001f94081_12``: ``id_001f94081``, 12), or None when an
    id does not end in ``_`` and a whole number."""
    parts = ids.astype(str).str.rpartition(_JOIN)
    if not (parts[1] == _JOIN).all() or not parts[2].str.fullmatch(r"\d+").all():
        return None
    return parts[0], parts[2].astype(int)


@dataclass(frozen=True)
class PositionRows:
    """The layout read from the folder (see the module docstring)."""

    id_column: str  # the sample's id: the record's id and the position
    record: str  # the records' id column, in train and test
    targets: tuple[str, ...]  # the train records' lists the sample predicts, one value per position
    texts: tuple[str, ...]  # text columns spelling a character per position
    inputs: tuple[str, ...]  # the record's other values, in train and test alike

    def train_rows(self, train: pd.DataFrame) -> pd.DataFrame:
        """One row per position the train records' target lists cover."""
        lists = {t: [_numbers(str(v)) for v in train[t]] for t in self.targets}
        lengths = [len(v) if v is not None else -1 for v in lists[self.targets[0]]]
        for t in self.targets:
            bad = next((i for i, v in enumerate(lists[t]) if v is None or len(v) != lengths[i]), None)
            if bad is not None:
                raise TaskError(
                    f"the train record {train[self.record].iloc[bad]!r} holds no list of numbers in {t!r} as long "
                    f"as its {self.targets[0]!r}: the targets must be lists of one number per position",
                    "write task.yaml by hand, with one row per position (see docs/guides/task-folders.md)",
                )
        records = np.repeat(np.arange(len(train)), lengths)
        positions = np.concatenate([np.arange(n) for n in lengths]) if lengths else np.array([], dtype=int)
        rows = self._rows(train, records, positions)
        for t in self.targets:
            rows[t] = [repr(v) for values in lists[t] for v in values or ()]
        return rows

    def test_rows(self, test: pd.DataFrame, ids: pd.Series, part: bool = False) -> pd.DataFrame:
        """One row per id the sample submission lists, from its test record; ``part``: ``test``
        is the head of the test file, and ids of the records past it are left out."""
        split = _split_id(ids)
        where = pd.Series(np.arange(len(test)), index=test[self.record].astype(str))
        if split is not None and part:
            known = split[0].isin(where.index).to_numpy()
            split = split[0][known], split[1][known]
        if split is None or not split[0].isin(where.index).all():
            raise TaskError(
                f"the sample submission's {self.id_column!r} holds ids that are no test record's "
                f"{self.record!r} and a position joined by {_JOIN!r}",
                "write task.yaml by hand, with one row per position (see docs/guides/task-folders.md)",
            )
        if where.index.duplicated().any():
            raise TaskError(
                f"the test records' {self.record!r} repeats: each record is one sequence",
                "write task.yaml by hand, with one row per position (see docs/guides/task-folders.md)",
            )
        return self._rows(test, where.loc[split[0]].to_numpy(), split[1].to_numpy())

    def _rows(self, records: pd.DataFrame, at: np.ndarray, positions: np.ndarray) -> pd.DataFrame:
        """The rows of ``records``' positions: record ``at[i]``, position ``positions[i]``."""
        ids = records[self.record].astype(str).to_numpy()[at]
        rows = {self.id_column: [f"{r}{_JOIN}{p}" for r, p in zip(ids, positions, strict=True)], self.record: ids}
        rows[POSITION] = positions.astype(str)
        for column in self.inputs:
            rows[column] = records[column].to_numpy()[at]
        for column in self.texts:
            text = records[column].astype(str).to_numpy()[at]
            for shift in range(-CONTEXT, CONTEXT + 1):
                name = column if shift == 0 else f"{column}_{'m' if shift < 0 else 'p'}{abs(shift)}"
                rows[name] = [
                    t[p + shift] if 0 <= p + shift < len(t) else "" for t, p in zip(text, positions, strict=True)
                ]
        return pd.DataFrame(rows)

    def note(self, sample_name: str, train_name: str) -> str:
        return (
            f"{train_name} holds one record per sequence, its targets {list(self.targets)[:6]} lists of one value "
            f"per position, and {sample_name}'s {self.id_column!r} is a record's {self.record!r} and a position "
            f"joined by {_JOIN!r}: read as one row per position, with each record's values and, of its text "
            f"column(s) {list(self.texts)}, the character at the position and {CONTEXT} either side"
        )


def position_rows(
    train: pd.DataFrame, test: pd.DataFrame, ids: pd.Series, id_column: str, predicted: list[str]
) -> PositionRows | None:
    """The layout of a folder whose sample asks for positions of the test records (see the module
    docstring), or None: every prediction column is a list of numbers in every probed train
    record and not a test column; the sample's ids (``ids``) are a test column's values (the
    record's id, unique in train and test) and whole numbers joined by ``_``."""
    if not predicted or id_column in test.columns:
        return None
    if any(c not in train.columns or c in test.columns for c in predicted):
        return None
    probe = train.head(_PROBE).astype(str)
    if any(probe[c].map(_numbers).isna().any() for c in predicted):
        return None
    split = _split_id(ids.head(_PROBE))
    if split is None:
        return None
    shared = [c for c in train.columns if c in test.columns]
    records = [
        c for c in shared
        if split[0].isin(set(test[c].astype(str))).all()
        and not train[c].duplicated().any() and not test[c].duplicated().any()
    ]  # fmt: skip
    if len(records) != 1:
        return None
    record = records[0]
    lengths = probe[predicted[0]].map(lambda v: len(_numbers(v) or ()))
    texts = tuple(
        c for c in shared
        if c != record and _spells_positions(probe[c], lengths)
    )  # fmt: skip
    listed = {c for c in shared if probe[c].map(_listed).notna().all()}
    inputs = tuple(c for c in shared if c != record and c not in texts and c not in listed)
    return PositionRows(id_column, record, tuple(predicted), texts, inputs)


def _spells_positions(values: pd.Series, lengths: pd.Series) -> bool:
    """Whether a column spells a character per position: text of no spaces, no number, in every
    probed record at least as long as its target lists and longer than one character."""
    numeric = pd.to_numeric(values, errors="coerce").notna()
    long = values.str.len() >= np.maximum(lengths, 2)
    return bool((~numeric & long & ~values.str.contains(" ") & ~values.str.startswith("[")).all())
