"""Parsers that turn the columns real data sets carry into numbers a model can use.

One copy of this code serves two places: the data profile imports it to decide each
column's kind (``mlguild.task.column_kinds``), and the recipe brain pastes it, unchanged, into
every script it writes, so a script parses a column exactly as the profile judged it.
That is why this module imports nothing from mlguild and needs only numpy and pandas.

Every parser takes a pandas Series of any dtype and returns a Series of the same index
in which a value it cannot read is missing (NaN or NaT): a stray cell never raises.
"""

import json
import re
import warnings

import numpy as np
import pandas as pd

# Cells that mean "no value" in exports and spreadsheets (compared lower-cased, stripped).
MISSING_WORDS = frozenset({"", "na", "n/a", "nan", "none", "null", "nil", "-", "--", "?", "#n/a", "missing"})
BOOLEAN_WORDS = {
    "true": 1.0,
    "false": 0.0,
    "t": 1.0,
    "f": 0.0,
    "yes": 1.0,
    "no": 0.0,
    "y": 1.0,
    "n": 0.0,
    "on": 1.0,
    "off": 0.0,
}
# A number written for people: currency signs or codes, thousands separators, a percent
# sign, accounting parentheses for negatives, a Unicode minus.
_CURRENCY = re.compile(r"^(?:[$€£¥₹]|usd|eur|gbp|chf|jpy)\s*|\s*(?:[$€£¥₹]|usd|eur|gbp|chf|jpy)$", re.IGNORECASE)
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:[, ]\d{3})+(?:\.\d+)?$")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")
_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*([ap]\.?m\.?)?$", re.IGNORECASE)
# Epoch timestamps this side of 2001-09-09 .. 2033-05-18, in seconds or milliseconds.
EPOCH_SECONDS = (1.0e9, 2.0e9)


def as_text(values: pd.Series) -> pd.Series:
    """Stripped strings; the cells that mean "no value" become missing."""
    text = values.astype("string").str.strip()
    missing = text.isna() | text.str.lower().isin(MISSING_WORDS)
    return text.astype(object).where(~missing.astype(bool), np.nan)


def _on_uniques(values: pd.Series, parse) -> pd.Series:
    """Apply ``parse`` (a function of a Series of distinct strings) to each distinct text once:
    real columns repeat their values, and the slow parsers then run once per value."""
    text = as_text(values)
    uniques = pd.Series(text.dropna().unique(), dtype=object)
    if uniques.empty:
        return pd.Series(np.nan, index=values.index, dtype=float)
    parsed = parse(uniques)
    return text.map(dict(zip(uniques, parsed, strict=True)))


def parse_number(values: pd.Series) -> pd.Series:
    """Floats from numbers as people write them: "1,234.5", "$ 1 234", "12.5%" (0.125),
    "(300)" (-300), "3,5" (3.5 where no value has a thousands separator), "1.2e3"."""
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    if pd.api.types.is_numeric_dtype(values):
        return pd.to_numeric(values, errors="coerce").astype(float)

    def parse(text: pd.Series) -> pd.Series:
        text = text.str.replace("\u2212", "-", regex=False).str.replace(_CURRENCY, "", regex=True).str.strip()
        negative = text.str.match(r"^\(.*\)$")
        text = text.where(~negative, text.str.slice(1, -1))
        percent = text.str.endswith("%")
        text = text.str.rstrip("%").str.strip()
        thousands = text.str.match(_THOUSANDS)
        if not thousands.any() and text.str.match(_DECIMAL_COMMA).any():
            text = text.str.replace(",", ".", regex=False)  # a decimal comma, as in "3,5"
        text = text.where(~thousands, text.str.replace(r"[, ]", "", regex=True))
        number = pd.to_numeric(text, errors="coerce").astype(float)
        number[percent] /= 100.0
        number[negative] *= -1.0
        return number.where(np.isfinite(number))

    return _on_uniques(values, parse).astype(float)


def parse_boolean(values: pd.Series) -> pd.Series:
    """1.0 / 0.0 from true/false, yes/no, y/n, t/f, on/off (any case) and 1/0; else missing."""
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
        number = pd.to_numeric(values, errors="coerce").astype(float)
        return number.where(number.isin([0.0, 1.0]))
    words = {**BOOLEAN_WORDS, "1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0}
    return as_text(values).str.lower().map(words).astype(float)


def parse_datetime(values: pd.Series) -> pd.Series:
    """Naive UTC timestamps from dates and times as text, with or without a time zone
    ("2013-11-18T12:50:12Z", "...+02:00", "2013-11-18 12:50", "03/15/2020", "15 Mar 2020"):
    zoned values are converted to UTC, so a column that mixes zones (or zoned and naive
    values) still compares and subtracts. Already-parsed datetimes are converted the same way."""
    if pd.api.types.is_datetime64_any_dtype(values):
        when = pd.to_datetime(values, utc=True)
        return when.dt.tz_convert(None)

    def parse(text: pd.Series) -> pd.Series:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "could not infer format": expected, per value
            when = pd.to_datetime(text, format="mixed", utc=True, errors="coerce")
        return pd.Series(when.dt.tz_convert(None).to_numpy(), index=text.index)

    return pd.to_datetime(_on_uniques(values, parse))


def parse_epoch(values: pd.Series) -> pd.Series:
    """Naive UTC timestamps from epoch numbers, in seconds or (values past 2e10) milliseconds."""
    number = parse_number(values)
    seconds = number.where(number.abs() < EPOCH_SECONDS[1] * 10, number / 1000.0)  # larger: milliseconds
    seconds = seconds.where(seconds.abs() < 4.0e9)  # beyond the year 2096: not a time
    return pd.to_datetime(seconds, unit="s", errors="coerce")


def parse_time_of_day(values: pd.Series) -> pd.Series:
    """Minutes after midnight from "HH:MM", "HH:MM:SS" or "h:MM pm"; else missing."""

    def parse(text: pd.Series) -> pd.Series:
        parts = text.str.extract(_TIME_OF_DAY)
        hours, minutes = pd.to_numeric(parts[0]), pd.to_numeric(parts[1])
        seconds = pd.to_numeric(parts[2]).fillna(0.0)
        meridiem = parts[3].fillna("").str.lower().str.startswith("p")
        twelve = parts[3].notna() & (hours == 12)
        hours = hours.where(~twelve, 0.0) + np.where(meridiem, 12.0, 0.0)
        total = hours * 60 + minutes + seconds / 60
        return total.where((hours < 24) & (minutes < 60))

    return _on_uniques(values, parse).astype(float)


def list_items(values: pd.Series) -> pd.Series:
    """The items of list- or JSON-valued cells ("[1, 2]", "['a', 'b']", '{"k": 1}') as a
    list of strings (a mapping gives its keys); a cell that is not a list gives None."""

    def parse(text: pd.Series) -> pd.Series:
        return text.map(_items)

    return _on_uniques(values, parse)


def _items(cell: str) -> list[str] | None:
    if not (cell[:1] in "[{(" and cell[-1:] in "]})"):
        return None
    try:
        parsed = json.loads(cell)
    except ValueError:
        # Python's repr of a list ("['a', 'b']") and other near-JSON: split on commas.
        inner = cell[1:-1].strip()
        return [part.strip().strip("'\"") for part in inner.split(",")] if inner else []
    if isinstance(parsed, dict):
        return [str(key) for key in parsed]
    return [str(item) for item in parsed] if isinstance(parsed, list) else None
