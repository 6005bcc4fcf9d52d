"""Data ordered in time: which column orders a task's rows, and whether its test rows come
after its train rows.

A task's ``time_column`` changes how the harness validates (the holdout is the latest
labelled rows, the recipes' folds are ordered in time). It is named in task.yaml, or inferred
here from the data: a column is a time column when every train and test value is a date or
a timestamp (ISO dates, datetimes with or without zones, year-month such as "2020-03") and no
test row is earlier than the latest train row. A column with a value that does not parse, or
an empty cell, is not one: which side of a cut such a row belongs to cannot be known.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..util.exact_csv import read_csv_exact
from .column_kinds import detect_kind
from .column_parsers import as_text, parse_datetime

# Column names that say "time" win when several columns qualify (a record's creation date
# over, say, a birth date that happens to be ordered too).
_PROBE = 2000  # rows of a column looked at before all of it is parsed
_TIME_WORDS = ("date", "time", "day", "month", "week", "year", "stamp", "period")


def parse_times(values: pd.Series) -> pd.Series | None:
    """The timestamps of a column holding a date or time in every cell, or None when it is
    not a time column (numbers, words, a value that does not parse, an empty cell)."""
    if pd.api.types.is_datetime64_any_dtype(values):
        when = parse_datetime(values)
    elif pd.api.types.is_numeric_dtype(values) or _plain_numbers(values):
        return None  # numbers are never dates (their kind is number_text); the common case, answered in C
    else:
        text = as_text(values)
        if text.isna().any() or detect_kind(values.astype(str), str(values.name)) != "datetime":
            return None
        when = parse_datetime(values)
    if when.isna().any():
        return None
    return when


def _plain_numbers(values: pd.Series) -> bool:
    """Whether every cell reads as a number as it is written: such a column is judged
    number_text (or constant, or empty), never datetime, so the slow judgement is skipped."""
    return bool(pd.to_numeric(values, errors="coerce").notna().all())


def _not_numbers(frame: pd.DataFrame, columns: list) -> list:
    """``columns`` of ``frame`` less those holding a number in every cell, found for a block
    of columns in one conversion: a wide table of numbers (50,000 columns) would otherwise
    spend most of a run's creation asking each column in turn."""
    textual = [c for c in columns if not pd.api.types.is_numeric_dtype(frame[c])]
    keep: list = []
    step = max(1, 1_000_000 // max(1, len(frame)))
    for start in range(0, len(textual), step):
        names = textual[start : start + step]
        cells = frame[names].to_numpy(dtype=object)
        numbers = pd.to_numeric(pd.Series(cells.ravel(), dtype=object), errors="coerce").to_numpy()
        every = pd.notna(numbers.reshape(cells.shape)).all(axis=0)
        keep += [name for name, plain in zip(names, every, strict=True) if not plain]
    return keep


@dataclass(frozen=True)
class TimeOrder:
    """A column in which every test row comes at or after the latest train row."""

    column: str
    train_first: pd.Timestamp
    train_last: pd.Timestamp
    test_first: pd.Timestamp
    test_last: pd.Timestamp

    def note(self) -> str:
        """The decision, as the CLI says it."""
        return (
            f"time column {self.column!r}: every test row ({_day(self.test_first)} to {_day(self.test_last)}) "
            f"comes at or after the latest train row ({_day(self.train_last)}), so the holdout is the latest "
            "labelled rows and validation folds are ordered in time (time_column in task.yaml; "
            "set it to null for a random holdout)"
        )


def _day(when: pd.Timestamp) -> str:
    return when.isoformat(sep=" ").removesuffix(" 00:00:00")


def time_orders(train: pd.DataFrame, test: pd.DataFrame, skip: list[str] | tuple[str, ...] = ()) -> list[TimeOrder]:
    """Every column of both frames in which the test rows come after the train rows in time
    (the train rows spanning more than one time), names that say "time" first."""
    found = []
    head = train.head(_PROBE)
    for column in _not_numbers(head, [c for c in train.columns if c not in skip and c in test.columns]):
        # A sample rules most columns out cheaply: parsing every value of every column of a
        # large table would cost more than the rest of a run's creation.
        if parse_times(head[column]) is None:
            continue
        train_times = parse_times(train[column])
        if train_times is None or train_times.nunique() < 2:
            continue
        test_times = parse_times(test[column])
        if test_times is None or test_times.empty or test_times.min() < train_times.max():
            continue
        found.append(TimeOrder(str(column), train_times.min(), train_times.max(), test_times.min(), test_times.max()))
    return sorted(found, key=lambda order: not any(word in order.column.lower() for word in _TIME_WORDS))


def time_orders_of_files(train_path: Path, test_path: Path, skip: list[str] | tuple[str, ...] = ()) -> list[TimeOrder]:
    """``time_orders`` of two CSV files, reading only the columns that can be times (a sample
    of the train file tells which) in full."""
    try:
        head = pd.read_csv(train_path, dtype=str, keep_default_na=False, nrows=_PROBE)
        test_head = pd.read_csv(test_path, dtype=str, keep_default_na=False, nrows=0)
        columns = [c for c in head.columns if c not in skip and c in test_head.columns]
        candidates = [c for c in _not_numbers(head, columns) if parse_times(head[c]) is not None]
        if not candidates:
            return []
        train = read_csv_exact(train_path, usecols=candidates)
        test = read_csv_exact(test_path, usecols=candidates)
    except (OSError, ValueError, TaskError):  # an unreadable or empty file: other checks name its problem
        return []
    return time_orders(train, test)


def infer_time_column(
    train: pd.DataFrame, test: pd.DataFrame, skip: list[str] | tuple[str, ...] = ()
) -> tuple[str | None, list[str]]:
    """(the time column, or None; the notes that say why) for a task's train and test rows."""
    orders = time_orders(train, test, skip)
    return _decision(orders)


def infer_time_column_of_files(
    train_path: Path, test_path: Path, skip: list[str] | tuple[str, ...] = ()
) -> tuple[str | None, list[str]]:
    """``infer_time_column`` of two CSV files."""
    return _decision(time_orders_of_files(train_path, test_path, skip))


def _decision(orders: list[TimeOrder]) -> tuple[str | None, list[str]]:
    if not orders:
        return None, []
    notes = [orders[0].note()]
    if len(orders) > 1:
        others = ", ".join(repr(o.column) for o in orders[1:4])
        notes.append(f"  ({others} {'is' if len(orders) == 2 else 'are'} ordered too; edit time_column to use another)")
    return orders[0].column, notes


def date_columns(frame: pd.DataFrame, skip: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Columns holding a date or time in every row (judged on a sample)."""
    head = frame.head(_PROBE)
    columns = _not_numbers(head, [c for c in frame.columns if c not in skip])
    return [str(c) for c in columns if parse_times(head[c]) is not None]


def time_lines(task: dict, split: dict | None) -> list[str]:
    """What a brief says about time order: the time column and the holdout's span, or the
    warning for a random holdout on time-ordered data; empty when neither applies."""
    split = split or {}
    column = task.get("time_column")
    if split.get("kind") == "time" and column:
        return [
            f"- The data are ordered in time by `{column}`: the holdout is the latest labelled rows "
            f"({split.get('holdout_first')} to {split.get('holdout_last')}; the training rows end at "
            f"{split.get('train_last')}), and the test rows come later still.",
            "- Validate in time order: fit on earlier rows and validate on later ones (expanding-window folds "
            f"on rows sorted by `{column}`); never train on rows later than the rows you validate on.",
        ]
    if split.get("warning"):
        return [f"- Warning: {split['warning']}"]
    return []


__all__ = [
    "TimeOrder",
    "date_columns",
    "infer_time_column",
    "infer_time_column_of_files",
    "parse_times",
    "time_lines",
    "time_orders",
    "time_orders_of_files",
]
