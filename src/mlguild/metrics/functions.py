"""The metric functions the registry (``mlguild.metrics``) names: pure numpy on arrays the
Scorer has already validated and converted (the conventions are in that module's docstring)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mlguild.metrics.ranking import check_len, factorize

_EPS = 1e-15


# ------------------------------------------------------------------ helpers


def _columnwise(fn: Callable[..., float]) -> Callable[..., float]:
    """Score 2-D inputs column by column and average (MCRMSE-style)."""

    def wrapped(y_true: Any, y_pred: Any, **params: Any) -> float:
        t, p = np.asarray(y_true), np.asarray(y_pred)
        if t.shape != p.shape:
            raise ValueError(f"y_true shape {t.shape} != y_pred shape {p.shape}")
        if t.ndim == 2:
            return float(np.mean([fn(t[:, j], p[:, j], **params) for j in range(t.shape[1])]))
        return fn(t, p, **params)

    return functools.wraps(fn)(wrapped)


def _columnwise_defined(fn: Callable[..., float]) -> Callable[..., float]:
    """Like ``_columnwise``, but a column on which ``fn`` is undefined (ValueError: a label
    column whose truth holds one class, as a rare label does on a small holdout) is left out
    of the mean; ValueError only when every column is."""

    def wrapped(y_true: Any, y_pred: Any, **params: Any) -> float:
        t, p = np.asarray(y_true), np.asarray(y_pred)
        if t.shape != p.shape:
            raise ValueError(f"y_true shape {t.shape} != y_pred shape {p.shape}")
        if t.ndim != 2:
            return fn(t, p, **params)
        scores = []
        for j in range(t.shape[1]):
            try:
                scores.append(fn(t[:, j], p[:, j], **params))
            except ValueError:
                continue
        if not scores:
            raise ValueError(f"{fn.__name__.strip('_')} is undefined on every column (each holds one class only)")
        return float(np.mean(scores))

    return functools.wraps(fn)(wrapped)


def _grouped_auc(y_true: np.ndarray, y_score: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-group ROC AUC via the Mann-Whitney U statistic, ties getting average ranks.

    Returns (auc per group, mask of groups that have both classes).
    """
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(y_score, dtype=np.float64)
    n_groups = int(codes.max()) + 1 if len(codes) else 0
    # by group, then by ascending score; a plain argsort when there is one group (faster)
    order = np.argsort(s) if n_groups <= 1 else np.lexsort((s, codes))
    g, ss, yy = codes[order], s[order], y[order]
    n = len(order)
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = g[1:] != g[:-1]
    new_block = new_group.copy()
    new_block[1:] |= ss[1:] != ss[:-1]
    group_start = np.flatnonzero(new_group)
    block_start = np.flatnonzero(new_block)
    block_end = np.append(block_start[1:], n)  # exclusive
    block_id = np.cumsum(new_block) - 1
    # 1-based average rank of a tie block, counted from the start of its group
    gstart_of_block = group_start[np.searchsorted(group_start, block_start, side="right") - 1]
    avg_rank = (block_start + block_end - 1) / 2.0 - gstart_of_block + 1.0
    rank_sum = np.bincount(g[yy], weights=avg_rank[block_id][yy], minlength=n_groups)
    n_pos = np.bincount(g, weights=yy, minlength=n_groups)
    n_neg = np.bincount(g, minlength=n_groups) - n_pos
    ok = (n_pos > 0) & (n_neg > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return auc, ok


# ------------------------------------------------------------------ metrics


def accuracy(y_true: Any, y_pred: Any) -> float:
    """Fraction of rows whose predicted label equals the true label (exact match)."""
    return float(np.mean(np.asarray(y_true) == np.asarray(y_pred)))


def error_rate(y_true: Any, y_pred: Any) -> float:
    """Fraction of rows whose predicted label differs from the true label (top-1 error: 1 - accuracy)."""
    return 1.0 - accuracy(y_true, y_pred)


def _roc_auc_1d(y_true: Any, y_score: Any) -> float:
    codes = np.zeros(len(y_true), dtype=np.int64)
    auc, ok = _grouped_auc(np.asarray(y_true), np.asarray(y_score), codes)
    if not ok[0]:
        raise ValueError("roc_auc is undefined: y_true has only one class")
    return float(auc[0])


def gauc(y_true: Any, y_score: Any, groups: Any) -> float:
    """Mean of per-group ROC AUC; groups with a single class are excluded."""
    check_len(y_true, y_score, groups)
    auc, ok = _grouped_auc(np.asarray(y_true), np.asarray(y_score), factorize(groups))
    if not ok.any():
        raise ValueError("gauc is undefined: no group has both positives and negatives")
    return float(np.mean(auc[ok]))


def _binary_logloss_1d(y_true: Any, y_prob: Any) -> float:
    y, p = _as_floats(y_true, y_prob)
    p = np.clip(p, _EPS, 1 - _EPS)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def logloss(y_true: Any, y_prob: Any) -> float:
    """Multiclass log loss: y_true are class indices, y_prob an (n, k) matrix.

    Like Kaggle: clip to [1e-15, 1-1e-15], renormalise each row, then the mean negative
    log probability of the true class.
    """
    y = np.asarray(y_true, dtype=np.int64)
    p = np.clip(np.asarray(y_prob, dtype=np.float64), _EPS, 1 - _EPS)
    if p.ndim != 2 or p.shape[0] != len(y):
        raise ValueError(f"y_prob must have shape (n, k) with n={len(y)}, got {p.shape}")
    if len(y) and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError("a class index in y_true is outside the probability columns")
    p = p / p.sum(axis=1, keepdims=True)
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))


def kl_divergence(y_true: Any, y_pred: Any) -> float:
    """Mean over rows of the Kullback-Leibler divergence KL(truth || prediction), each row of
    several columns read as a distribution: the truth's row (vote counts, say) divided by its sum,
    the prediction's raised to at least 1e-15 and divided by its sum (Kaggle's HMS metric clips
    probabilities so; predicted counts are shares once divided). A cell whose truth is 0 adds
    nothing; a truth row that sums to 0 is an error."""
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    if t.ndim != 2 or t.shape != p.shape or t.shape[1] < 2:
        raise ValueError(f"kl_divergence needs (n, k>=2) truth and predictions of one shape, got {t.shape}, {p.shape}")
    totals = t.sum(axis=1, keepdims=True)
    if (t < 0).any() or (totals <= 0).any():
        raise ValueError("kl_divergence needs truth rows of non-negative values with a positive sum")
    t = t / totals
    p = np.maximum(np.nan_to_num(p, nan=_EPS), _EPS)
    p = p / p.sum(axis=1, keepdims=True)
    terms = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1.0)) - np.log(p)), 0.0)
    return float(np.mean(terms.sum(axis=1)))


def logloss_columns(y_true: Any, y_pred: Any) -> float:
    """Multi-class log loss of one outcome spread over 0/1 columns (exactly one 1 a row: lmsys'
    winner_model_a, winner_model_b, winner_tie), each row's predictions raised to at least 1e-15
    and divided by their sum, as scikit-learn's ``log_loss`` does: the mean of -log of the
    probability given to each row's column. (Over a one-hot truth it is ``kl_divergence``.)"""
    t = np.asarray(y_true, dtype=np.float64)
    if t.ndim != 2 or t.shape[1] < 2 or not np.isin(t, (0.0, 1.0)).all() or (t.sum(axis=1) != 1).any():
        raise ValueError("logloss_columns needs truth rows of 0/1 columns with exactly one 1 each")
    return kl_divergence(t, y_pred)


def _shared_codes(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Both label arrays as codes over the sorted union of their labels, and its size."""
    t, p = np.asarray(y_true), np.asarray(y_pred)
    check_len(t, p)
    _, inv = np.unique(np.concatenate([t, p]), return_inverse=True)
    return inv[: len(t)], inv[len(t) :], (int(inv.max()) + 1 if len(inv) else 0)


def f1(y_true: Any, y_pred: Any, positive_label: Any = "1") -> float:
    """Binary F1 of the class ``positive_label`` (0.0 when it never occurs in either)."""
    t, p = np.asarray(y_true) == positive_label, np.asarray(y_pred) == positive_label
    check_len(t, p)
    tp = np.sum(t & p)
    denom = 2 * tp + np.sum(~t & p) + np.sum(t & ~p)
    return float(2 * tp / denom) if denom else 0.0


def multilabel_f1_micro(y_true: Any, y_pred: Any, positive_label: Any = "1") -> float:
    """Micro F1 over label columns (one 0/1 cell per row and label): every cell pooled, so a
    frequent label weighs more; 0.0 when no cell holds ``positive_label`` in either."""
    t, p = np.asarray(y_true) == positive_label, np.asarray(y_pred) == positive_label
    if t.shape != p.shape:
        raise ValueError(f"y_true shape {t.shape} != y_pred shape {p.shape}")
    tp = np.sum(t & p)
    denom = 2 * tp + np.sum(~t & p) + np.sum(t & ~p)
    return float(2 * tp / denom) if denom else 0.0


def multilabel_f1_macro(y_true: Any, y_pred: Any, positive_label: Any = "1") -> float:
    """Macro F1 over label columns: the binary F1 of ``positive_label`` in each column, averaged
    (a column with no positive cell in truth or prediction counts 0, as scikit-learn's default)."""
    return _columnwise(lambda t, p: f1(t, p, positive_label=positive_label))(y_true, y_pred)


def _sets(y_true: Any, y_pred: Any) -> tuple[list[set[str]], list[set[str]]]:
    """Both columns of label sets (a list of labels per row) as sets, the same length."""
    truth, pred = [set(row) for row in y_true], [set(row) for row in y_pred]
    check_len(truth, pred)
    return truth, pred


def f1_sets(y_true: Any, y_pred: Any) -> float:
    """Micro F1 over label sets: every row's predicted labels against its true ones, true and
    false positives and false negatives pooled over the rows, as scikit-learn's micro F1 of the
    binarised sets. A predicted label that no row's truth holds is not counted (MLE-bench's
    graders binarise over the answers' labels); 0.0 when nothing is true or predicted."""
    truth, pred = _sets(y_true, y_pred)
    known = set().union(*truth) if truth else set()
    tp = fp = fn = 0
    for t, p in zip(truth, pred, strict=True):
        p = p & known
        hits = len(t & p)
        tp, fp, fn = tp + hits, fp + len(p) - hits, fn + len(t) - hits
    denom = 2 * tp + fp + fn
    return float(2 * tp / denom) if denom else 0.0


def f1_sets_mean(y_true: Any, y_pred: Any) -> float:
    """The mean over rows of each row's F1 between its predicted and true label sets (Kaggle's
    "Mean F1"): 2|P & T| / (|P| + |T|), 1 for a row whose sets are both empty."""
    truth, pred = _sets(y_true, y_pred)
    scores = [2 * len(t & p) / (len(t) + len(p)) if t or p else 1.0 for t, p in zip(truth, pred, strict=True)]
    return float(np.mean(scores)) if scores else 0.0


def mcc(y_true: Any, y_pred: Any) -> float:
    """Matthews correlation coefficient of two label arrays (scikit-learn's multi-class form,
    which for two labels is the binary one): 0.0 when either side holds a single label."""
    ti, pi, k = _shared_codes(y_true, y_pred)
    n = float(len(ti))
    correct = float(np.sum(ti == pi))
    t, p = np.bincount(ti, minlength=k).astype(float), np.bincount(pi, minlength=k).astype(float)
    cov = correct * n - float(t @ p)
    denom = math.sqrt((n * n - float(p @ p)) * (n * n - float(t @ t)))
    return cov / denom if denom else 0.0


def f1_macro(y_true: Any, y_pred: Any) -> float:
    """Unweighted mean of per-class F1 over every label seen in y_true or y_pred."""
    ti, pi, k = _shared_codes(y_true, y_pred)
    tp = np.bincount(ti[ti == pi], minlength=k)
    denom = np.bincount(ti, minlength=k) + np.bincount(pi, minlength=k)
    scores = np.divide(2 * tp, denom, out=np.zeros(k, dtype=np.float64), where=denom > 0)
    return float(np.mean(scores)) if k else 0.0


def _as_floats(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)


def _rmse_1d(y_true: Any, y_pred: Any) -> float:
    t, p = _as_floats(y_true, y_pred)
    return float(np.sqrt(np.mean((t - p) ** 2)))


def _mse_1d(y_true: Any, y_pred: Any) -> float:
    t, p = _as_floats(y_true, y_pred)
    return float(np.mean((t - p) ** 2))


def _rmsle_1d(y_true: Any, y_pred: Any) -> float:
    t, p = _as_floats(y_true, y_pred)
    if (t <= -1).any() or (p <= -1).any():
        raise ValueError("rmsle needs every truth and prediction to be > -1")
    return float(np.sqrt(np.mean((np.log1p(p) - np.log1p(t)) ** 2)))


def _mae_1d(y_true: Any, y_pred: Any) -> float:
    t, p = _as_floats(y_true, y_pred)
    return float(np.mean(np.abs(t - p)))


# The floor of a group's MAE before its log (CHAMPS' own): a perfect group scores log(1e-9).
GROUP_MAE_FLOOR = 1e-9


def group_log_mae(y_true: Any, y_pred: Any, groups: Any) -> float:
    """The mean over groups of the log of each group's mean absolute error (CHAMPS' scalar
    coupling score, groups its coupling types): a 1% smaller error in any group gains the same."""
    check_len(y_true, y_pred, groups)
    t, p = _as_floats(y_true, y_pred)
    codes = factorize(groups)
    if not len(codes):
        raise ValueError("group_log_mae is undefined on no rows")
    errors = np.bincount(codes, weights=np.abs(t - p)) / np.bincount(codes)
    present = np.bincount(codes) > 0
    return float(np.mean(np.log(np.maximum(errors[present], GROUP_MAE_FLOOR))))


def smape(y_true: Any, y_pred: Any) -> float:
    """Symmetric mean absolute percentage error, in percent, as Kaggle computes it: the mean of
    200 |F - A| / (|A| + |F|), a row whose truth and prediction are both 0 counting 0."""
    t, p = _as_floats(y_true, y_pred)
    if not len(t):
        raise ValueError("smape is undefined on no rows")
    scale = np.abs(t) + np.abs(p)
    share = np.divide(2.0 * np.abs(p - t), scale, out=np.zeros_like(scale), where=scale > 0)
    return float(100.0 * np.mean(share))


def _r2_1d(y_true: Any, y_pred: Any) -> float:
    t, p = _as_floats(y_true, y_pred)
    ss_res = np.sum((t - p) ** 2)
    ss_tot = np.sum((t - t.mean()) ** 2)
    if ss_tot == 0:  # constant truth: same convention as sklearn's force_finite
        return 1.0 if ss_res == 0 else 0.0
    return float(1 - ss_res / ss_tot)


def qwk(y_true: Any, y_pred: Any) -> float:
    """Quadratic weighted kappa over integer labels.

    Same definition as ``sklearn.metrics.cohen_kappa_score(weights="quadratic")``: the
    categories are the distinct labels seen in either input, weighted by their index in
    sorted order (identical to the min..max rating form when every rating occurs).
    """
    ti, pi, k = _shared_codes(y_true, y_pred)
    observed = np.bincount(ti * k + pi, minlength=k * k).reshape(k, k).astype(np.float64)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2
    denom = np.sum(w * expected)
    if denom == 0:  # a single category everywhere: kappa is 0/0, as in sklearn
        return math.nan
    return float(1 - np.sum(w * observed) / denom)


def jaccard_words(y_true: Any, y_pred: Any) -> float:
    """The mean over rows of the Jaccard similarity of each row's words: the lower-cased,
    whitespace-separated words of the prediction and of the truth as two sets, |P & T| / |P | T|
    (the word-level Jaccard score of tweet-sentiment-extraction and chaii). A row where neither
    text has a word scores 0, as scikit-learn's samples-averaged Jaccard scores it."""
    truth = [set(str(text).lower().split()) for text in y_true]
    pred = [set(str(text).lower().split()) for text in y_pred]
    check_len(truth, pred)
    scores = [len(t & p) / len(t | p) if t | p else 0.0 for t, p in zip(truth, pred, strict=True)]
    return float(np.mean(scores)) if scores else 0.0


def angular_distance(y_true: Any, y_pred: Any) -> float:
    """The mean angle, in radians, between each row's true and predicted directions, each given
    as two columns, azimuth then zenith, in radians (IceCube's mean angular error): the arc
    cosine of the two unit vectors' scalar product, clipped to [-1, 1]."""
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    if t.ndim != 2 or t.shape != p.shape or t.shape[1] != 2:
        raise ValueError(
            f"angular_distance needs (n, 2) truth and predictions (azimuth, zenith), got {t.shape}, {p.shape}"
        )
    (az1, zen1), (az2, zen2) = t.T, p.T
    cosine = np.sin(zen1) * np.sin(zen2) * np.cos(az1 - az2) + np.cos(zen1) * np.cos(zen2)
    return float(np.mean(np.arccos(np.clip(cosine, -1.0, 1.0))))


def pf1(y_true: Any, y_score: Any) -> float:
    """Probabilistic F1 (the RSNA breast cancer competition's pF1): precision and recall with
    each row's probability, clipped to [0, 1], counted as its share of a positive prediction;
    0 when either is 0. Undefined (ValueError) when the truth holds no positive."""
    t = np.asarray(y_true).astype(bool)
    p = np.clip(np.asarray(y_score, dtype=np.float64), 0.0, 1.0)
    check_len(t, p)
    if not t.any():
        raise ValueError("pf1 is undefined: y_true has no positive")
    true_positive, false_positive = float(p[t].sum()), float(p[~t].sum())
    predicted = true_positive + false_positive
    precision = true_positive / predicted if predicted else 0.0
    recall = true_positive / float(t.sum())
    return 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0
