"""Which columns of a table are an exact copy of a label, judged for all columns at once.

The builder refuses a task whose inputs hold a copy of its target, and the verifier looks
for a renamed copy of a sealed label in every workspace file. Asked one column at a time
(``comparable`` per column) that costs milliseconds a column: minutes for a table of 50,000
columns, checked several times. Here a block of columns is converted to numbers in one call
and compared with the label as a matrix, with the same meaning as ``comparable``: numbers
compare as numbers ("1.0" equals "1", to 9 decimals), anything else as exact text.
On a long table, the columns are first compared on their first rows: a column that differs
from the label there is no copy, so only the few that agree are converted whole.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_BLOCK_CELLS = 2_000_000  # cells converted at once: bounds the memory of a wide, long table
_FIRST_ROWS = 1_000  # the rows every column is compared on before any is converted whole


def comparable(values: pd.Series) -> pd.Series:
    """Compare numbers as numbers ("1.0" == "1") and everything else as exact text."""
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().all():
        return numbers.astype(float).round(9).astype(str)
    return values.astype(str)


def copied_columns(frame: pd.DataFrame, truth: pd.Series, skip: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The columns of ``frame`` (rows aligned with ``truth``) other than ``skip`` whose every
    value equals the label's, numbers compared as numbers."""
    columns = [c for c in frame.columns if c not in skip]
    if not columns or len(frame) == 0:
        return []
    if len(frame) > 2 * _FIRST_ROWS:
        columns = _agree_on_first_rows(frame[columns].head(_FIRST_ROWS), truth.head(_FIRST_ROWS))
        if not columns:
            return []
    label = truth.to_numpy(dtype=object)
    label_numbers = _numbers(label.reshape(-1, 1))[:, 0]
    numeric_label = bool(pd.notna(label_numbers).all())
    found: list[str] = []
    step = max(1, _BLOCK_CELLS // len(frame))
    for start in range(0, len(columns), step):
        names = columns[start : start + step]
        cells = frame[names].to_numpy(dtype=object)
        numbers = _numbers(cells)
        all_numbers = pd.notna(numbers).all(axis=0)
        if numeric_label:  # only a column of numbers can equal numbers
            same = (np.round(numbers, 9) == np.round(label_numbers, 9)[:, None]).all(axis=0) & all_numbers
        else:  # only a column with some text can equal text exactly
            same = (cells.astype(str) == label.astype(str)[:, None]).all(axis=0) & ~all_numbers
        found += [names[i] for i in np.flatnonzero(same)]
    return found


def _agree_on_first_rows(head: pd.DataFrame, truth: pd.Series) -> list[str]:
    """The columns of ``head`` whose every value equals the label's as text or as a number: a
    condition every copy meets on any rows, whichever way its whole column compares."""
    label = truth.to_numpy(dtype=object)
    label_numbers = np.round(_numbers(label.reshape(-1, 1))[:, 0], 9)
    found: list[str] = []
    step = max(1, _BLOCK_CELLS // len(head))
    columns = list(head.columns)
    for start in range(0, len(columns), step):
        names = columns[start : start + step]
        cells = head[names].to_numpy(dtype=object)
        same_text = cells.astype(str) == label.astype(str)[:, None]
        same_number = np.round(_numbers(cells), 9) == label_numbers[:, None]
        found += [names[i] for i in np.flatnonzero((same_text | same_number).all(axis=0))]
    return found


def _numbers(cells: np.ndarray) -> np.ndarray:
    """The cells as floats (NaN where a cell is not a number), in one conversion."""
    flat = pd.to_numeric(pd.Series(cells.ravel(), dtype=object), errors="coerce")
    return flat.to_numpy(dtype=float, na_value=np.nan).reshape(cells.shape)
