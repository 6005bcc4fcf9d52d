"""What each input column holds, judged from the training rows: the column's *kind*.

Real exports carry far more than numbers and short labels: timestamps with and without
zones, epoch seconds, booleans and numbers written as text, lists, ids. The kind tells a
brain how to turn a column into features (the recipe scripts parse each kind with
``mlguild.task.column_parsers``, the same code that judged it here) and tells an LLM what it is
looking at. A judgement is made on at most a few thousand distinct values, so it costs
little on big data.
"""

from __future__ import annotations

import re
from typing import Literal

import pandas as pd

from .column_parsers import (
    BOOLEAN_WORDS,
    EPOCH_SECONDS,
    as_text,
    list_items,
    parse_datetime,
    parse_number,
    parse_time_of_day,
)

ColumnKind = Literal[
    "numeric",
    "number_text",
    "mixed",
    "boolean",
    "datetime",
    "epoch",
    "time",
    "list",
    "text",
    "categorical",
    "id",
    "constant",
    "empty",
]

# What each kind means and how a model can use it: shown to LLMs with the profile.
KIND_NOTES: dict[str, str] = {
    "numeric": "numbers",
    "number_text": "numbers written as text (thousands separators, currency or percent signs): parse them",
    "mixed": "mostly numbers, some words: parse the numbers, keep the words as a category",
    "boolean": "true/false written as text (yes/no, Y/N, True/False)",
    "datetime": "dates or timestamps as text, possibly with time zones (parse with utc=True)",
    "epoch": "timestamps as epoch seconds or milliseconds",
    "time": "times of day without a date",
    "list": "list- or JSON-valued cells",
    "text": "free text",
    "categorical": "labels or codes",
    "id": "a row identifier: no signal, leave it out",
    "constant": "one value only: no signal, leave it out",
    "empty": "always missing: leave it out",
}
# Kinds that carry no signal: the recipes leave them out.
UNUSABLE: frozenset[str] = frozenset({"id", "constant", "empty"})

_ID_NAME = re.compile(r"^(id|.*[_ ]id|.*Id|ID|index|row_?id|rownames|unnamed: ?\d+|)$", re.IGNORECASE)
_TIME_NAME = re.compile(r"time|date|stamp|epoch|created|updated|modified|_at$|^ts$|_ts$", re.IGNORECASE)
# A date has digits in a date-like pattern ("2013-11-18", "3/15/2020", "15 Mar 2020",
# "March 15, 2020"); without it, words like "May" or codes like "A1" would parse as dates.
_DATE_SHAPE = re.compile(
    r"\d{1,4}[-/.]\d{1,2}|\d{1,2}\s+[A-Za-z]{3,9}\.?,?\s+\d{2,4}|[A-Za-z]{3,9}\.?\s+\d{1,2},?\s+\d{2,4}"
)
_TEXT_MIN_MEAN_LENGTH = 30  # shorter strings are labels or categories, longer ones are prose
_MOST = 0.9  # share of distinct values that must parse for a kind to be named
_NUMBER_SHARE = 0.95  # ... for numbers written as text (below it, down to half: mixed)
_SAMPLE = 5000  # distinct values examined


def detect_kind(series: pd.Series, name: str, text_columns: list[str] | tuple[str, ...] = ()) -> ColumnKind:
    """The kind of one training column; ``text_columns`` are the task's declared text columns."""
    if name in text_columns:
        return "text"
    text = as_text(series) if series.dtype == object else series
    present = text.dropna()
    if present.empty:
        return "empty"
    if present.nunique() <= 1:
        return "constant"
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    if pd.api.types.is_numeric_dtype(series):
        return _numeric_kind(present, name)
    return _text_kind(present.astype(str), len(series))


def plainly_numeric(name: str) -> bool:
    """Whether a column of numbers called ``name`` can only be numeric, constant or empty:
    its name says neither id nor time (which would make it a candidate id or epoch column)."""
    return not _ID_NAME.match(name) and not _TIME_NAME.search(name)


def _numeric_kind(values: pd.Series, name: str) -> ColumnKind:
    integral = bool((values == values.round()).all())
    if _ID_NAME.match(name) and integral and values.is_unique:
        return "id"
    if _TIME_NAME.search(name) and integral:
        seconds = values.where(values.abs() < EPOCH_SECONDS[1] * 10, values / 1000.0)
        if seconds.between(*EPOCH_SECONDS).mean() >= _MOST:
            return "epoch"
    return "numeric"


def _text_kind(values: pd.Series, n_rows: int) -> ColumnKind:
    counts = values.value_counts().head(_SAMPLE)  # the most frequent distinct values
    distinct = pd.Series(counts.index, dtype=object)
    weights = counts.to_numpy(dtype=float)

    def share(parsed: pd.Series) -> float:
        """The share of rows (among the examined values) whose value parses (is not missing,
        or is True for a test)."""
        ok = parsed.fillna(False).astype(bool) if parsed.dtype == bool else parsed.notna()
        return float(weights[ok.to_numpy()].sum() / weights.sum())

    lowered = set(distinct.str.lower())
    if lowered <= set(BOOLEAN_WORDS) and {BOOLEAN_WORDS[w] for w in lowered} == {0.0, 1.0}:
        return "boolean"
    if share(list_items(distinct)) >= _MOST:
        return "list"
    numbers = share(parse_number(distinct))
    if numbers >= _NUMBER_SHARE:
        return "number_text"
    if distinct.str.len().mean() >= _TEXT_MIN_MEAN_LENGTH and len(counts) > 0.5 * len(values):
        return "text"
    if share(parse_time_of_day(distinct)) >= _MOST:
        return "time"
    if share(distinct.str.contains(_DATE_SHAPE)) >= _MOST and share(parse_datetime(distinct)) >= _MOST:
        return "datetime"
    if numbers >= 0.5:
        return "mixed"
    if len(counts) == len(values) and n_rows > 50:
        return "id"
    return "categorical"


__all__ = ["KIND_NOTES", "UNUSABLE", "ColumnKind", "detect_kind", "plainly_numeric"]
