"""The holdout of data ordered in time: the latest share of the labelled rows.

A random holdout of such data scores a model on days it saw the neighbours of, and on days
before some of its training rows: the future is predicted from the past *and the future*.
With a ``time_column`` the holdout is instead the latest labelled rows, so every training
row is earlier than (or as old as) every holdout row, as the test rows are later still.

Rows that share the time at the cut go wholly to one side (the side that keeps the holdout
nearest its share), so two rows of one day are never split. When keys repeat (``ids_unique``
false: a user's impressions) whole groups move, and a group goes by its *latest* time: then
no training row is later than the cut, which is what "never train on the future" needs (a
holdout group may have rows earlier than some training rows; that is the cost of keeping
groups whole).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import TaskError
from ..task.time_order import TimeOrder, parse_times


def time_holdout(times: pd.Series, n_holdout: int, groups: pd.Series | None = None) -> np.ndarray:
    """Boolean mask of the holdout rows: the latest ``n_holdout`` rows or so (ties at the cut
    and whole ``groups`` kept on one side), never every row."""
    key = times.groupby(groups.to_numpy()).transform("max") if groups is not None else times
    values = key.to_numpy()
    n = len(values)
    if n_holdout <= 0 or n < 2:
        return np.zeros(n, dtype=bool)
    cut = np.sort(values)[n - min(n_holdout, n - 1)]  # the earliest time the holdout should hold
    with_ties, without_ties = values >= cut, values > cut
    options = [mask for mask in (with_ties, without_ties) if 0 < mask.sum() < n]
    if not options:  # a single time: nothing is later than anything else
        return np.zeros(n, dtype=bool)
    return min(options, key=lambda mask: (abs(int(mask.sum()) - n_holdout), -int(mask.sum())))


def task_times(train: pd.DataFrame, column: str, where: str) -> pd.Series:
    """The parsed times of the task's ``time_column``; TaskError naming the fix when a value
    is not a date (the harness cannot tell which side of the cut such a row belongs to)."""
    if column not in train.columns:
        raise TaskError(f"time_column {column!r} is not a column of {where}", "fix time_column in task.yaml")
    times = parse_times(train[column])
    if times is None:
        from ..task.column_parsers import parse_datetime

        bad = train[column][parse_datetime(train[column]).isna()].head(3).tolist()
        raise TaskError(
            f"time_column {column!r} of {where} holds values that are not dates or times (e.g. {bad})",
            "fill or remove those rows, or set time_column: null in task.yaml for a random holdout",
        )
    return times


def time_split_record(times: pd.Series, mask: np.ndarray, column: str, grouped: bool) -> dict:
    """The manifest's words for a time-ordered split: the column, the spans, the tie rule."""

    def day(when: pd.Timestamp) -> str:
        return when.isoformat(sep=" ").removesuffix(" 00:00:00")

    fit, held = times[~mask], times[mask]
    record = {
        "kind": "time",
        "time_column": column,
        "train_first": day(fit.min()) if len(fit) else None,
        "train_last": day(fit.max()) if len(fit) else None,
        "holdout_first": day(held.min()) if len(held) else None,
        "holdout_last": day(held.max()) if len(held) else None,
        "ties": "rows sharing the time at the cut are all on one side",
    }
    if grouped:
        record["groups"] = "whole groups, each placed by its latest time"
    return record


def random_holdout_warning(orders: list[TimeOrder], forced: bool) -> str | None:
    """The warning for a random holdout on data whose test rows come after its train rows in
    a date column (``orders``, from ``task.time_order``; ``forced``: the config asked for random
    although the task names a time column)."""
    if not orders:
        return None
    column = orders[0].column
    if forced:
        return (
            f"the holdout is random (firewall.holdout=random) although the test rows come after the train rows "
            f"in {column!r}: holdout scores then predict the past from the future and flatter every model; "
            "drop firewall.holdout=random for a holdout of the latest rows"
        )
    return (
        f"the holdout is random although every test row comes after the train rows in {column!r}: holdout "
        "scores then predict the past from the future and flatter every model; "
        f"set time_column: {column} in task.yaml for a holdout of the latest rows"
    )


def split_line(split: dict) -> tuple[str, bool] | None:
    """What a run says about its holdout when time matters: (the line, whether it is a warning),
    or None for a plain random split."""
    if split.get("kind") == "time":
        return (
            f"holdout the latest {split.get('holdout_rows')} labelled rows by {split['time_column']!r} "
            f"({split['holdout_first']} to {split['holdout_last']}); training rows end at {split['train_last']}",
            False,
        )
    if split.get("warning"):
        return str(split["warning"]), True
    return None


__all__ = ["random_holdout_warning", "split_line", "task_times", "time_holdout", "time_split_record"]
