"""Metric registry: named metric functions that know their direction (Score lives in score.py).

A metric's direction lives here, next to its function, so no caller (and no LLM) ever
decides whether bigger is better. Functions are pure numpy on arrays the Scorer has
already validated and converted, so ``import mlguild.metrics`` stays fast and needs
neither scikit-learn nor scipy.

Conventions for ``Metric.fn(y_true, y_pred, **params) -> float``:

* 2-D ``value`` / ``probability`` / ``label`` inputs (several target columns) are scored
  per column and averaged, like MCRMSE or a column-wise mean AUC.
* A metric that is undefined on its input (ROC AUC with one class, every group excluded)
  raises ``ValueError``: that is a property of the task's labels, not of the submission.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from mlguild.core.errors import ConfigError
from mlguild.core.score import Direction, Score
from mlguild.core.suggest import closest
from mlguild.metrics.ranking import check_len, factorize, map_at_k, ndcg_at_k

__all__ = ["METRICS", "Direction", "Metric", "Score", "get_metric", "per_column"]

Prediction = Literal["label", "probability", "class_probabilities", "value", "ranked_list"]
# How the Scorer converts the truth column(s) before calling ``fn``:
#   label: exact strings; integer: ints (and predictions must be ints too);
#   binary: 0/1 via the positive label; class: index into the class columns;
#   value: floats; tokens: list of space-separated tokens per row.
Truth = Literal["label", "integer", "binary", "class", "value", "tokens"]

_DEFAULT_TRUTH: dict[str, str] = {
    "label": "label",
    "probability": "binary",
    "class_probabilities": "class",
    "value": "value",
    "ranked_list": "tokens",
}
_EPS = 1e-15


@dataclass(frozen=True)
class Metric:
    """A named metric: its function, direction and the kind of prediction it scores.

    ``truth`` says how the Scorer converts the truth column (defaults from ``prediction``);
    ``params`` names the keyword parameters ``fn`` accepts, so a typo in a task's metric
    parameters is a clear error rather than a silently ignored option.
    """

    name: str
    direction: Direction
    prediction: Prediction
    fn: Callable[..., float] = field(repr=False)
    description: str
    truth: Truth | None = None
    params: tuple[str, ...] = ()
    perfect: float | None = None
    """The best value the metric can take; None means 1 when maximized, 0 when minimized
    (true of every metric registered here). Reaching it on a holdout is flagged as a possible leak."""

    def __post_init__(self) -> None:
        if self.direction not in ("maximize", "minimize"):
            raise ValueError(f"metric {self.name!r}: direction must be maximize or minimize")
        if self.prediction not in _DEFAULT_TRUTH:
            raise ValueError(f"metric {self.name!r}: unknown prediction kind {self.prediction!r}")
        if self.truth is None:
            object.__setattr__(self, "truth", _DEFAULT_TRUTH[self.prediction])
        if self.perfect is None:
            object.__setattr__(self, "perfect", 1.0 if self.direction == "maximize" else 0.0)

    @property
    def grouped(self) -> bool:
        """True when the metric needs a ``groups`` array (one group id per row)."""
        return "groups" in self.params

    def __call__(self, y_true: Any, y_pred: Any, **params: Any) -> float:
        unknown = set(params) - set(self.params)
        if unknown:
            raise ConfigError(
                f"metric {self.name!r} does not take parameter(s) {sorted(unknown)}; "
                f"it takes {list(self.params) or 'none'}",
                fix="correct metric_params in task.yaml",
            )
        return float(self.fn(y_true, y_pred, **params))


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


# ------------------------------------------------------------------ registry


_m = Metric
METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        _m("accuracy", "maximize", "label", _columnwise(accuracy), "fraction of exactly matching labels"),
        _m("roc_auc", "maximize", "probability", _columnwise(_roc_auc_1d), "binary ROC AUC (ties averaged)"),
        _m("logloss", "minimize", "class_probabilities", logloss, "multiclass log loss, rows clipped and renormalised"),
        _m(
            "binary_logloss",
            "minimize",
            "probability",
            _columnwise(_binary_logloss_1d),
            "binary log loss, clipped to [1e-15, 1-1e-15]",
        ),
        _m("f1", "maximize", "label", f1, "binary F1 of the positive label", params=("positive_label",)),
        _m("f1_macro", "maximize", "label", f1_macro, "unweighted mean of per-class F1"),
        _m(
            "multilabel_f1_micro",
            "maximize",
            "label",
            multilabel_f1_micro,
            "micro F1 over label columns (0/1 per cell, every cell pooled)",
            params=("positive_label",),
        ),
        _m(
            "multilabel_f1_macro",
            "maximize",
            "label",
            multilabel_f1_macro,
            "macro F1 over label columns (binary F1 per column, averaged)",
            params=("positive_label",),
        ),
        # Several columns scored together, named as the competitions' graders name them; each
        # is its one-column metric averaged over the columns (see PER_COLUMN).
        _m("mcrmse", "minimize", "value", _columnwise(_rmse_1d), "mean column-wise root mean squared error"),
        _m(
            "mean_columnwise_rmsle",
            "minimize",
            "value",
            _columnwise(_rmsle_1d),
            "mean column-wise root mean squared log error, values > -1",
        ),
        _m(
            "mean_columnwise_roc_auc",
            "maximize",
            "probability",
            _columnwise_defined(_roc_auc_1d),
            "mean column-wise ROC AUC (ties averaged; a column whose truth holds one class is left out)",
        ),
        _m(
            "mean_columnwise_logloss",
            "minimize",
            "probability",
            _columnwise(_binary_logloss_1d),
            "mean column-wise binary log loss, clipped to [1e-15, 1-1e-15]",
        ),
        _m("rmse", "minimize", "value", _columnwise(_rmse_1d), "root mean squared error (column-wise mean)"),
        _m("mse", "minimize", "value", _columnwise(_mse_1d), "mean squared error (column-wise mean)"),
        _m("rmsle", "minimize", "value", _columnwise(_rmsle_1d), "root mean squared log error, values > -1"),
        _m("mae", "minimize", "value", _columnwise(_mae_1d), "mean absolute error (column-wise mean)"),
        _m("r2", "maximize", "value", _columnwise(_r2_1d), "coefficient of determination (column-wise mean)"),
        _m("qwk", "maximize", "label", qwk, "quadratic weighted kappa over integer labels", truth="integer"),
        _m("map_at_k", "maximize", "ranked_list", map_at_k, "mean average precision at k (Kaggle mapk)", params=("k",)),
        _m(
            "gauc",
            "maximize",
            "value",
            gauc,
            "mean per-group ROC AUC, single-class groups excluded",
            truth="binary",
            params=("groups",),
        ),
        _m(
            "ndcg_at_k",
            "maximize",
            "value",
            ndcg_at_k,
            "mean per-group nDCG@k, groups with no relevant item excluded",
            params=("groups", "k", "gain"),
        ),
    ]
}


# Names users type for a registered metric (scikit-learn's, Kaggle's, the short ones), after
# _fold: lower case, spaces and dashes as underscores.
ALIASES: dict[str, str] = {
    "auc": "roc_auc", "rocauc": "roc_auc", "roc_auc_score": "roc_auc", "auroc": "roc_auc",
    "acc": "accuracy", "accuracy_score": "accuracy",
    "log_loss": "logloss", "mlogloss": "logloss", "multi_logloss": "logloss", "cross_entropy": "logloss",
    "bce": "binary_logloss", "binary_crossentropy": "binary_logloss", "binary_log_loss": "binary_logloss",
    "f1_score": "f1", "macro_f1": "f1_macro", "f1macro": "f1_macro",
    "mean_squared_error": "mse", "l2": "mse",
    "root_mean_squared_error": "rmse",
    "root_mean_squared_log_error": "rmsle",
    "mean_absolute_error": "mae", "l1": "mae",
    "r2_score": "r2", "r_squared": "r2",
    "kappa": "qwk", "quadratic_weighted_kappa": "qwk",
    "map@k": "map_at_k", "mapk": "map_at_k", "map": "map_at_k",
    "ndcg": "ndcg_at_k", "ndcg@k": "ndcg_at_k",
    "mean_columnwise_rmse": "mcrmse", "mean_column_wise_rmse": "mcrmse", "columnwise_rmse": "mcrmse",
    "mcrmsle": "mean_columnwise_rmsle", "mean_column_wise_rmsle": "mean_columnwise_rmsle",
    "columnwise_rmsle": "mean_columnwise_rmsle",
    "mean_columnwise_auc": "mean_columnwise_roc_auc", "mean_column_wise_roc_auc": "mean_columnwise_roc_auc",
    "mean_column_wise_auc": "mean_columnwise_roc_auc", "columnwise_auc": "mean_columnwise_roc_auc",
    "mean_auc": "mean_columnwise_roc_auc",
    "mean_columnwise_log_loss": "mean_columnwise_logloss", "mean_column_wise_log_loss": "mean_columnwise_logloss",
    "columnwise_logloss": "mean_columnwise_logloss", "columnwise_log_loss": "mean_columnwise_logloss",
    "micro_f1": "multilabel_f1_micro", "f1_micro": "multilabel_f1_micro", "multilabel_f1": "multilabel_f1_micro",
    "multilabel_micro_f1": "multilabel_f1_micro", "multilabel_macro_f1": "multilabel_f1_macro",
}  # fmt: skip

# The one-column metric each several-column metric averages (what a script can compute per
# target column, and what draft choices such as a log-scale target key on).
PER_COLUMN: dict[str, str] = {
    "mcrmse": "rmse",
    "mean_columnwise_rmsle": "rmsle",
    "mean_columnwise_roc_auc": "roc_auc",
    "mean_columnwise_logloss": "binary_logloss",
    "multilabel_f1_micro": "f1",
    "multilabel_f1_macro": "f1",
}


def per_column(name: str) -> str:
    """The one-column metric that ``name`` averages over columns (``name`` itself for the others)."""
    return PER_COLUMN.get(name, name)


def _fold(name: str) -> str:
    return name.strip().casefold().replace("-", "_").replace(" ", "_")


def metric_name(name: str, where: str = "task.yaml's 'metric'") -> str:
    """The registered name of the metric a user called ``name`` (``auc`` is ``roc_auc``). An
    unknown name is a ``ConfigError`` with a did-you-mean whose fix names ``where`` it was given."""
    folded = _fold(name)
    if folded in METRICS:
        return folded
    if folded in ALIASES:
        return ALIASES[folded]
    guess = closest(folded, [*METRICS, *ALIASES])
    guess = ALIASES.get(guess, guess) if guess is not None else None
    hint = f"; did you mean {guess!r}?" if guess is not None else ""
    if where.startswith("--"):
        fix = f"pass {where} {guess or 'NAME'}" if guess is not None else f"pass {where} with one of the known metrics"
    else:
        fix = f"set {where} to {guess}" if guess is not None else f"set {where} to one of the known metrics"
    raise ConfigError(f"unknown metric {name!r}{hint} (known: {', '.join(sorted(METRICS))})", fix)


def get_metric(name: str) -> Metric:
    """The registered metric called ``name`` or one of its ``ALIASES``; ``ConfigError`` with a
    did-you-mean otherwise."""
    return METRICS[metric_name(name)]
