"""Correlation metrics: Pearson's r, Spearman's rho (Pearson's r of average ranks, ties
averaged as ``scipy.stats.spearmanr`` ranks them), and the mean column-wise Spearman that
google-quest-challenge's grader computes. Pure numpy, like the rest of the registry.

A correlation is undefined when a side is constant (scipy returns nan). A constant truth is
the task's labels' property: ValueError, so a column-wise mean leaves that column out (a rare
label on a small holdout). A constant prediction shows no relation at all: 0.0, so the floor
of a constant prediction is 0 and a submission that predicts one value never scores nan."""

from __future__ import annotations

from typing import Any

import numpy as np


def _pearson_1d(y_true: Any, y_pred: Any) -> float:
    """Pearson's correlation coefficient of two value columns."""
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    dt, dp = t - t.mean(), p - p.mean()
    st, sp = float(np.sqrt(np.sum(dt * dt))), float(np.sqrt(np.sum(dp * dp)))
    if st == 0 or not np.isfinite(st):
        raise ValueError("a correlation is undefined when every truth value is the same")
    if sp == 0:
        return 0.0
    return float(np.clip(np.sum(dt * dp) / (st * sp), -1.0, 1.0))


def average_ranks(values: Any) -> np.ndarray:
    """Ranks from 1, tied values sharing the mean of their ranks (scipy's rankdata 'average')."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(inverse, weights=ranks) / counts)[inverse]


def _spearman_1d(y_true: Any, y_pred: Any) -> float:
    """Spearman's rank correlation of two value columns: Pearson's r of their average ranks."""
    return _pearson_1d(average_ranks(y_true), average_ranks(y_pred))
