"""Column-wise measures of a wide table of text, a block of columns per pandas call: asked
one column at a time, a table of 50,000 columns pays pandas' per-call cost 50,000 times."""

from __future__ import annotations

import numpy as np
import pandas as pd

_BLOCK_CELLS = 2_000_000  # cells handled at once: bounds the memory of a wide, long table


def mean_lengths(frame: pd.DataFrame, columns: list) -> dict:
    """The mean length of the present (non-missing) values of each of ``columns`` (NaN for a
    column with none), as ``frame[c].str.len().mean()`` would say it."""
    found: dict = {}
    arrow = [c for c in columns if _arrow_text(frame[c])]  # Arrow measures its own strings at once
    for name in arrow:
        found[name] = float(frame[name].str.len().mean()) if frame[name].notna().any() else float("nan")
    columns = [c for c in columns if c not in set(arrow)]
    step = max(1, _BLOCK_CELLS // max(1, len(frame)))
    for start in range(0, len(columns), step):
        names = columns[start : start + step]
        cells = frame[names].to_numpy(dtype=object)
        lengths = pd.Series(cells.ravel(), dtype=object).str.len().to_numpy(dtype=float, na_value=np.nan)
        lengths = lengths.reshape(cells.shape)
        counts = (~np.isnan(lengths)).sum(axis=0)
        sums = np.nansum(lengths, axis=0)
        means = np.divide(sums, counts, out=np.full(len(names), np.nan), where=counts > 0)
        found.update(zip(names, means.tolist(), strict=True))
    return found


def _arrow_text(values: pd.Series) -> bool:
    """Whether a column holds Arrow strings (as ``util.exact_csv`` reads a file)."""
    return (
        isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"
    )
