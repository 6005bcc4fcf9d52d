"""Metric registry: named metric functions that know their direction (what a metric is: metric.py;
Score lives in core/score.py).

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

import math

from mlguild.core.errors import ConfigError
from mlguild.core.score import Direction, Score
from mlguild.core.suggest import closest
from mlguild.metrics import combined, python_file
from mlguild.metrics.aliases import ALIASES
from mlguild.metrics.correlation import _pearson_1d, _spearman_1d
from mlguild.metrics.functions import (
    GROUP_MAE_FLOOR,
    _binary_logloss_1d,
    _columnwise,
    _columnwise_defined,
    _mae_1d,
    _mse_1d,
    _r2_1d,
    _rmse_1d,
    _rmsle_1d,
    _roc_auc_1d,
    accuracy,
    angular_distance,
    error_rate,
    f1,
    f1_macro,
    f1_sets,
    f1_sets_mean,
    gauc,
    group_log_mae,
    jaccard_words,
    kl_divergence,
    logloss,
    logloss_columns,
    mcc,
    multilabel_f1_macro,
    multilabel_f1_micro,
    pf1,
    qwk,
    smape,
)
from mlguild.metrics.metric import Metric
from mlguild.metrics.ranking import map_at_k, ndcg_at_k

__all__ = ["METRICS", "Direction", "Metric", "Score", "get_metric", "per_column"]

# ------------------------------------------------------------------ registry


_m = Metric
METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        _m("accuracy", "maximize", "label", _columnwise(accuracy), "fraction of exactly matching labels"),
        _m("error_rate", "minimize", "label", error_rate, "fraction of wrong labels (top-1 error, 1 - accuracy)"),
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
            "kl_divergence",
            "minimize",
            "value",
            kl_divergence,
            "mean Kullback-Leibler divergence of each row's predicted distribution over the target columns "
            "from the true one (rows normalised to sum 1)",
        ),
        _m(
            "logloss_columns",
            "minimize",
            "probability",
            logloss_columns,
            "multi-class log loss of one outcome spread over 0/1 target columns (one 1 a row), each row's "
            "predictions clipped to 1e-15 and normalised to sum 1",
            truth="value",
        ),
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
        _m(
            "mean_columnwise_spearman",
            "maximize",
            "value",
            _columnwise_defined(_spearman_1d),
            "mean column-wise Spearman rank correlation (ties averaged; a column whose truth is constant is left out)",
        ),
        _m("rmse", "minimize", "value", _columnwise(_rmse_1d), "root mean squared error (column-wise mean)"),
        _m("mse", "minimize", "value", _columnwise(_mse_1d), "mean squared error (column-wise mean)"),
        _m("rmsle", "minimize", "value", _columnwise(_rmsle_1d), "root mean squared log error, values > -1"),
        _m("mae", "minimize", "value", _columnwise(_mae_1d), "mean absolute error (column-wise mean)"),
        _m("smape", "minimize", "value", smape, "symmetric mean absolute percentage error, in percent (Kaggle's)"),
        _m("r2", "maximize", "value", _columnwise(_r2_1d), "coefficient of determination (column-wise mean)"),
        _m(
            "pearson",
            "maximize",
            "value",
            _columnwise(_pearson_1d),
            "Pearson correlation (0 for a constant prediction)",
        ),
        _m("spearman", "maximize", "value", _columnwise(_spearman_1d), "Spearman rank correlation, ties averaged"),
        _m("qwk", "maximize", "label", qwk, "quadratic weighted kappa over integer labels", truth="integer"),
        _m("mcc", "maximize", "label", mcc, "Matthews correlation coefficient of the labels (multi-class form)"),
        _m("map_at_k", "maximize", "ranked_list", map_at_k, "mean average precision at k (Kaggle mapk)", params=("k",)),
        _m(
            "f1_sets",
            "maximize",
            "label_set",
            f1_sets,
            "micro F1 over space-separated label sets (labels pooled over rows; labels no true set holds not counted)",
        ),
        _m(
            "f1_sets_mean",
            "maximize",
            "label_set",
            f1_sets_mean,
            "mean over rows of the F1 between each row's predicted and true label sets (Kaggle's Mean F1)",
        ),
        _m(
            "jaccard_words",
            "maximize",
            "label",
            jaccard_words,
            "mean over rows of the Jaccard similarity of the lower-cased words of the predicted and true texts",
            free_text=True,
        ),
        _m(
            "angular_distance",
            "minimize",
            "value",
            angular_distance,
            "mean angle in radians between true and predicted directions (two target columns: azimuth, zenith)",
        ),
        _m(
            "group_log_mae",
            "minimize",
            "value",
            group_log_mae,
            "mean over the groups of an input column (metric_params.group_column) of the log of each group's "
            "mean absolute error, floored at 1e-9",
            params=("groups",),
            perfect=math.log(GROUP_MAE_FLOOR),
            strata=True,
        ),
        _m(
            "pf1",
            "maximize",
            "probability",
            pf1,
            "probabilistic F1: precision and recall counting each row's probability (clipped to [0, 1])",
        ),
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


# The one-column metric each several-column metric averages (what a script can compute per
# target column, and what draft choices such as a log-scale target key on).
PER_COLUMN: dict[str, str] = {
    "mcrmse": "rmse",
    "mean_columnwise_rmsle": "rmsle",
    "mean_columnwise_roc_auc": "roc_auc",
    "mean_columnwise_spearman": "spearman",
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
    """The registered name of the metric a user called ``name`` (``auc`` is ``roc_auc``; a mean of
    metrics, ``mean(gauc, ndcg@5)``, its canonical spelling). An unknown name is a
    ``ConfigError`` with a did-you-mean whose fix names ``where`` it was given."""
    if combined.is_combined(name):
        return _combined(name, where).name
    if python_file.is_python(name):
        return _python(name, where).name
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
    """The registered metric called ``name`` or one of its ``ALIASES``, or a mean of registered
    metrics; ``ConfigError`` with a did-you-mean otherwise."""
    if combined.is_combined(name):
        return _combined(name, "task.yaml's 'metric'")
    if python_file.is_python(name):
        return _python(name, "task.yaml's 'metric'")
    return METRICS[metric_name(name)]


def _python(name: str, where: str) -> Metric:
    """The Metric of ``python(FILE, DIRECTION, ...)``: the user's file, run by the scorer."""
    try:
        path, direction, kind, grouped = python_file.parse(name)
    except ValueError as exc:
        raise ConfigError(str(exc), f"correct {where}: e.g. python(metric.py, maximize)") from None
    return Metric(
        python_file.spelled(path, direction, kind, grouped),
        direction,  # type: ignore[arg-type]
        kind,  # type: ignore[arg-type]
        python_file.function(path, grouped),
        f"score(y_true, y_pred) of the task's metric file {path}",
        params=("groups",) if grouped else (),
        perfect=math.nan,  # unknown: reaching some value is never taken for a leak
    )


_MEANS: dict[str, Metric] = {}  # means built so far, by the name as given and as canonical


def _combined(name: str, where: str) -> Metric:
    """The Metric of ``mean(...)``: its parts' direction, prediction kind and truth, which must
    agree (values and 0/1 truths mix: a binary part reads a value above 0 as relevant)."""
    if name in _MEANS:
        return _MEANS[name]
    fix = f"correct {where}: e.g. mean(gauc, ndcg@5), or mean(0.7*gauc, 0.3*ndcg@5)"
    try:
        parts = combined.parse(name, lambda part: metric_name(part, where))
    except ValueError as exc:
        raise ConfigError(str(exc), fix) from None
    metrics = [METRICS[p.name] for p in parts]
    spelled = combined.spelled(parts)
    directions, predictions = {m.direction for m in metrics}, {m.prediction for m in metrics}
    truths = {m.truth for m in metrics}
    why = None
    if len(directions) > 1:
        why = "its metrics do not share a direction (some are maximized, some minimized)"
    elif len(predictions) > 1 and predictions != {"value", "probability"}:
        why = f"its metrics score different predictions ({', '.join(sorted(predictions))})"
    elif len(truths) > 1 and truths != {"value", "binary"}:
        why = f"its metrics read the truth differently ({', '.join(sorted(str(t) for t in truths))})"
    no_k = [p.name for p, m in zip(parts, metrics) if p.k is not None and "k" not in m.params]
    if no_k:
        why = f"{', '.join(no_k)} take(s) no cut-off @k"
    if why:
        raise ConfigError(f"metric {name!r}: {why}", fix)
    value_truth = len(truths) > 1
    metric = Metric(
        spelled,
        metrics[0].direction,
        "probability" if "probability" in predictions else metrics[0].prediction,
        combined.mean_of(parts, metrics, value_truth),
        "weighted mean of " + ", ".join(p.spelled(True) for p in parts),
        truth="value" if value_truth else metrics[0].truth,
        params=("groups",) if any(m.grouped for m in metrics) else (),
    )
    _MEANS[name] = _MEANS[spelled] = metric
    return metric
