"""Ranking metrics (MAP@k over ranked lists, nDCG@k over grouped scores) and the helpers
that grouped metrics share; registered with the others in metrics.py."""

from __future__ import annotations

from typing import Any

import numpy as np


def factorize(values: Any) -> np.ndarray:
    """Dense integer codes for group ids (hashing: sorting a million strings is slow)."""
    import pandas as pd  # lazy: slow to import, and only grouped metrics need it

    return pd.factorize(np.asarray(values), sort=False)[0].astype(np.int64)


def check_len(*arrays: Any) -> None:
    lens = {len(a) for a in arrays}
    if len(lens) > 1:
        raise ValueError(f"inputs have different lengths: {sorted(lens)}")


def _apk(actual: list, predicted: list, k: int) -> float:
    if not actual:
        return 0.0
    relevant = set(actual)
    seen: set = set()
    hits, score = 0, 0.0
    for i, item in enumerate(predicted[:k]):
        # a repeated prediction earns nothing the second time (Kaggle's apk)
        if item in relevant and item not in seen:
            hits += 1
            score += hits / (i + 1.0)
        seen.add(item)
    return score / min(len(actual), k)


def map_at_k(y_true: Any, y_pred: Any, k: int = 5) -> float:
    """Mean average precision at k (Kaggle's mapk): lists of relevant vs ranked items."""
    if len(y_true) != len(y_pred):
        raise ValueError(f"inputs have different lengths: {len(y_true)} != {len(y_pred)}")
    if int(k) < 1:
        raise ValueError("map_at_k needs k >= 1")
    if not len(y_true):
        return 0.0
    return float(np.mean([_apk(list(a), list(p), int(k)) for a, p in zip(y_true, y_pred)]))


def ndcg_at_k(y_true: Any, y_score: Any, groups: Any, k: int = 10, gain: str = "linear") -> float:
    """Mean per-group nDCG@k of predicted scores against relevance labels.

    Tied scores share the average gain of their tie block (as sklearn's ``ndcg_score``
    does), so a constant predictor gets no luck from row order. ``gain`` is ``linear``
    (rel, sklearn) or ``exponential`` (2**rel - 1, LightGBM). Groups with no relevant
    item cannot be scored and are excluded.
    """
    rel = np.asarray(y_true, dtype=np.float64)
    s = np.asarray(y_score, dtype=np.float64)
    check_len(rel, s, groups)
    if int(k) < 1:
        raise ValueError("ndcg_at_k needs k >= 1")
    if gain not in ("linear", "exponential"):
        raise ValueError("gain must be 'linear' or 'exponential'")
    g_all = rel if gain == "linear" else np.exp2(rel) - 1.0
    codes = factorize(groups)
    n, n_groups = len(codes), (int(codes.max()) + 1 if len(codes) else 0)

    def positions(sorted_codes: np.ndarray) -> np.ndarray:
        start = np.ones(n, dtype=bool)
        start[1:] = sorted_codes[1:] != sorted_codes[:-1]
        first = np.flatnonzero(start)
        return np.arange(n) - first[np.cumsum(start) - 1]

    def discount(pos: np.ndarray) -> np.ndarray:
        return np.where(pos < int(k), 1.0 / np.log2(pos + 2.0), 0.0)

    order = np.lexsort((-s, codes))
    gc, sc, gain_sorted = codes[order], s[order], g_all[order]
    disc = discount(positions(gc))
    new_block = np.ones(n, dtype=bool)
    new_block[1:] = (gc[1:] != gc[:-1]) | (sc[1:] != sc[:-1])
    starts = np.flatnonzero(new_block)
    sizes = np.diff(np.append(starts, n))
    block_gain = np.add.reduceat(gain_sorted, starts) / sizes if n else np.zeros(0)
    block_disc = np.add.reduceat(disc, starts) if n else np.zeros(0)
    dcg = np.bincount(gc[starts], weights=block_gain * block_disc, minlength=n_groups)

    ideal = np.lexsort((-g_all, codes))
    gi = codes[ideal]
    idcg = np.bincount(gi, weights=g_all[ideal] * discount(positions(gi)), minlength=n_groups)
    ok = idcg > 0
    if not ok.any():
        raise ValueError("ndcg_at_k is undefined: no group has a relevant item")
    return float(np.mean(dcg[ok] / idcg[ok]))
