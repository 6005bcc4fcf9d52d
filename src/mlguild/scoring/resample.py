"""Bootstrap resamples of a holdout's rows, for the noise of a score and paired comparisons.

Rows are drawn with replacement (a ranked list's rows, each a query, too). A grouped metric (GAUC, nDCG within a group) is scored within
groups, so there whole groups are drawn, each draw a group of its own (a group drawn twice
counts twice, as a row drawn twice does): the noise of a grouped score is that of its groups.
A metric averaged over a few strata (``Metric.strata``: CHAMPS' coupling types) keeps every
stratum and draws rows within each: its noise is that of each stratum's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import Metric


def resampled(
    metric: Metric, params: dict, truth: Any, predictions: list[Any], n_resamples: int, seed: int
) -> Iterator[list[float]]:
    """For each bootstrap resample of the rows (or of the groups, see the module) that can be
    scored, the metric of every prediction array on it (paired: the same rows for each)."""
    truth = _rows(truth)
    arrays = [_rows(p) for p in predictions]
    rng = np.random.default_rng(seed)
    groups = params.get("groups")
    if groups is None:
        for _ in range(n_resamples):
            rows = rng.integers(0, len(truth), size=len(truth))
            try:
                yield [metric(truth[rows], p[rows], **params) for p in arrays]
            except ValueError:  # e.g. a resample with one class only, for AUC
                continue
        return
    codes = pd.factorize(np.asarray(groups))[0]
    order = np.argsort(codes, kind="stable")
    members = np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
    sizes = np.array([len(m) for m in members])
    if metric.strata:
        for _ in range(n_resamples):
            rows = np.concatenate([rng.choice(m, size=len(m)) for m in members])
            try:
                yield [metric(truth[rows], p[rows], **{**params, "groups": codes[rows]}) for p in arrays]
            except ValueError:
                continue
        return
    for _ in range(n_resamples):
        drawn = rng.integers(0, len(members), size=len(members))
        rows = np.concatenate([members[g] for g in drawn])
        drawn_groups = np.repeat(np.arange(len(drawn)), sizes[drawn])
        try:
            yield [metric(truth[rows], p[rows], **{**params, "groups": drawn_groups}) for p in arrays]
        except ValueError:
            continue


def _rows(values: Any) -> np.ndarray:
    """An array indexable by row: ranked lists (a list of lists, ragged) as an object array."""
    if isinstance(values, np.ndarray):
        return values
    if len(values) and isinstance(values[0], list):
        out = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            out[i] = value
        return out
    return np.asarray(values)
