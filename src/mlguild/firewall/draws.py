"""The seeded random draw of sealed rows (the holdout's, the confirmation split's)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def split_holdout(labels: pd.Series, fraction: float, max_rows: int, seed: int, stratify: bool) -> np.ndarray:
    """Boolean mask of holdout rows: seeded, stratified by label when ``stratify``.

    Every class keeps at least one training row, so a rare class is never sealed away entirely.
    """
    n = len(labels)
    n_holdout = min(int(round(n * fraction)), max_rows, n - 1)
    rng = np.random.default_rng(seed)
    mask = np.zeros(n, dtype=bool)
    if n_holdout <= 0:
        return mask
    if not stratify:
        mask[rng.choice(n, size=n_holdout, replace=False)] = True
        return mask
    share = n_holdout / n
    codes, uniques = pd.factorize(labels, sort=True)
    for code in range(len(uniques)):
        rows = np.flatnonzero(codes == code)
        take = min(int(round(len(rows) * share)), len(rows) - 1)
        if take > 0:
            mask[rng.choice(rows, size=take, replace=False)] = True
    return mask


__all__ = ["split_holdout"]
