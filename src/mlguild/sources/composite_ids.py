"""A competition folder whose test rows are listed only by the sample submission's ids, each id
made of the train file's columns joined by ``_`` (nfl-player-contact-detection: ``contact_id``
is ``game_play``, ``step``, ``nfl_player_id_1`` and ``nfl_player_id_2``, as in
``58168_003392_0_38590_43854``; its train file ``train_labels.csv`` holds the id, those columns
and the label, and no CSV holds the test rows).

The train file says how its ids are made: the one order of its columns whose values, joined
by ``_``, are every probed row's id (``id_parts``), each column's values always taking the
same number of ``_``-separated parts (``58168_003392`` takes two). The sample's ids are then
split into those columns (``composite_test_rows``): the test table is the ids and their parts,
written as the converted task folder's test file (``sources/convert_folder``). A folder where
no such order exists, or several do, or a sample id does not split as the train ids do, is
not read so.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import tables
from .submission_ids import JOIN, made_id

_PROBE = 500  # train rows that must all be made so (the order is checked on every one of them)
_MAX_ORDERS = 64  # orders of columns tried on the first row before giving up


def id_parts(train: pd.DataFrame, id_column: str) -> tuple[tuple[str, int], ...] | None:
    """The train columns, each with how many ``_``-separated parts its values take, whose values
    joined by ``_`` in this order are each probed row's id; None when no order of two or more
    columns makes every id, or more than one does."""
    if id_column not in train or train.empty:
        return None
    rows = train.head(_PROBE).astype(str).reset_index(drop=True)
    ids = rows[id_column]
    if ids.eq("").any() or ids.duplicated().any():
        return None
    parts: dict[str, int] = {}
    for column in rows.columns:
        values = rows[column]
        counts = values.str.count(JOIN) + 1
        if column == id_column or values.eq("").any() or counts.nunique() != 1:
            continue
        if all(f"{JOIN}{v}{JOIN}" in f"{JOIN}{i}{JOIN}" for v, i in zip(values, ids, strict=True)):
            parts[column] = int(counts.iloc[0])
    orders = _orders(ids.iloc[0].split(JOIN), rows.iloc[0], parts)
    made = [order for order in orders if len(order) >= 2 and made_id(rows, order).equals(ids)]
    return tuple((c, parts[c]) for c in made[0]) if len(made) == 1 else None


def _orders(tokens: list[str], row: pd.Series, parts: dict[str, int]) -> list[tuple[str, ...]]:
    """Every order of distinct columns of ``parts`` whose values in ``row`` spell ``tokens``."""
    found: list[tuple[str, ...]] = []

    def extend(at: int, used: tuple[str, ...]) -> None:
        if len(found) >= _MAX_ORDERS:
            return
        if at == len(tokens):
            found.append(used)
            return
        for column, n in parts.items():
            if column not in used and JOIN.join(tokens[at : at + n]) == row[column]:
                extend(at + n, (*used, column))

    extend(0, ())
    return found


def split_ids(ids: pd.Series, parts: tuple[tuple[str, int], ...]) -> pd.DataFrame | None:
    """The columns ``parts`` of each id, split as the train ids are; None when an id has another
    number of parts."""
    split = ids.astype(str).str.split(JOIN)
    if not split.map(len).eq(sum(n for _, n in parts)).all():
        return None
    columns, at = {}, 0
    for column, n in parts:
        columns[column] = split.map(lambda tokens, a=at, b=at + n: JOIN.join(tokens[a:b]))
        at += n
    return pd.DataFrame(columns)


def composite_test_rows(
    others: list[Path], sample_path: Path, indexed: bool, train: pd.DataFrame, id_column: str
) -> tuple[pd.DataFrame, tuple[str, ...]] | None:
    """(the test table, the columns its ids were split into) when no file of ``others`` holds
    the id column or every column it is made of (no test table lists the rows: a test file
    with those columns and its inputs is read as such, ``submission_ids``) and the sample's
    ids split into the columns the train file's ids are made of; else None."""
    headers = [set(tables.header(p)) for p in others]
    if id_column not in train or any(id_column in header for header in headers):
        return None
    parts = id_parts(train, id_column)
    if parts is None or any({c for c, _ in parts} <= header for header in headers):
        return None
    ids = tables.frame(sample_path).iloc[:, int(indexed) :][id_column]
    if ids.empty or ids.duplicated().any():  # ids that repeat list no rows one by one
        return None
    split = split_ids(ids, parts)
    if split is None:
        return None
    return pd.concat([ids.rename(id_column).reset_index(drop=True), split], axis=1), tuple(c for c, _ in parts)


def composite_note(made_of: tuple[str, ...], id_column: str, sample_name: str, train_name: str, rows: int) -> str:
    """What inference says of a test table split from the sample's ids."""
    return (
        f"no CSV of test rows: {train_name}'s {id_column!r} is {list(made_of)} joined by {JOIN!r}, so the "
        f"{rows} ids of {sample_name} are split into those columns as the test table"
    )
