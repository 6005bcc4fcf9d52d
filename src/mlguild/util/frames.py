"""Column-wise measures of a wide table of text, a block of columns per pandas call: asked
one column at a time, a table of 50,000 columns pays pandas' per-call cost 50,000 times."""

from __future__ import annotations

import numpy as np
import pandas as pd

_BLOCK_CELLS = 2_000_000  # cells handled at once: bounds the memory of a wide, long table


def mean_lengths(frame: pd.DataFrame, columns: list) -> dict:
    """The mean length of the present (non-missing) values of each of ``columns`` (NaN for a
    column with none), as ``frame[c].str.len().mean()`` would say it."""
    return {name: means_of(total) for name, total in length_totals(frame, columns).items()}


def means_of(total: tuple[float, int]) -> float:
    """A (sum of lengths, count of values) pair as a mean length (NaN for no values)."""
    return total[0] / total[1] if total[1] else float("nan")


def length_totals(frame: pd.DataFrame, columns: list) -> dict:
    """(the summed length of the present values, their count) for each of ``columns``: the
    totals of several blocks of rows add up to the whole table's."""
    found: dict = {}
    arrow = [c for c in columns if _arrow_text(frame[c])]  # Arrow measures its own strings at once
    for name in arrow:
        lengths = frame[name].str.len()
        found[name] = (float(lengths.sum()), int(lengths.notna().sum()))
    columns = [c for c in columns if c not in set(arrow)]
    step = max(1, _BLOCK_CELLS // max(1, len(frame)))
    for start in range(0, len(columns), step):
        names = columns[start : start + step]
        cells = frame[names].to_numpy(dtype=object)
        lengths = pd.Series(cells.ravel(), dtype=object).str.len().to_numpy(dtype=float, na_value=np.nan)
        lengths = lengths.reshape(cells.shape)
        counts = (~np.isnan(lengths)).sum(axis=0)
        sums = np.nansum(lengths, axis=0)
        found.update(zip(names, zip(sums.tolist(), counts.tolist(), strict=True), strict=True))
    return found


def _arrow_text(values: pd.Series) -> bool:
    """Whether a column holds Arrow strings (as ``util.exact_csv`` reads a file)."""
    return (
        isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"
    )
