"""FLAML as a peer of mlguild: fit on all labelled rows within a time budget, predict the test rows.

Run with the FLAML venv's python (benchmarks/peers/setup.sh flaml):

    .bench/flaml/bin/python benchmarks/peers/run_flaml.py --task TASK_DIR --budget 300 --out sub.csv

Settings: ``AutoML().fit(X, y, task=classification|regression, metric=<the task metric or its
closest FLAML metric>, time_budget=budget, n_jobs=threads)``; everything else is FLAML's default
(estimators lgbm, rf, xgboost, extra_tree, xgb_limitdepth, sgd, and lrl1 for classification;
its own holdout or CV; refit of the best configuration on all rows). RMSLE, which FLAML lacks, is passed as a custom metric.

Text columns: FLAML's tabular transformer drops a string column whose values are all
distinct and turns any other string column into a categorical (ordinal codes); it does no
text featurisation for classification or regression (its NLP tasks fine-tune transformers,
which need torch and a model download: not used here). In the reviews example, ``product`` (all
distinct) is dropped and ``review`` (3,980 distinct values in 4,000 rows) becomes a categorical
whose test values are all unseen, so its predictions there are close to constant (AUC near
0.5). ``info.json`` records which columns were kept as categoricals and which were dropped.
Image arrays are plain numeric pixel columns (784 for digits), used as numbers.
"""

from __future__ import annotations

import sys

import pandas as pd
from _common import Clock, load_job, parse_args, rmsle, save_info, write_submission

FLAML_METRIC = {
    "roc_auc": "roc_auc",
    "accuracy": "accuracy",
    "logloss": "log_loss",
    "binary_logloss": "log_loss",
    "f1": "f1",
    "f1_macro": "macro_f1",
    "rmse": "rmse",
    "mae": "mae",
    "r2": "r2",
}


def rmsle_metric(X_val, y_val, estimator, labels, X_train, y_train, *args, **kwargs):
    """FLAML's custom-metric signature: (loss to minimise, numbers to log)."""
    loss = rmsle(y_val, estimator.predict(X_val))
    return loss, {"rmsle": loss}


def string_columns(automl, X: pd.DataFrame) -> dict:
    """What FLAML's transformer made of the non-numeric columns: categoricals, or dropped."""
    transformer = getattr(automl, "_transformer", None)
    cats = list(getattr(transformer, "_cat_columns", []) or [])
    nums = list(getattr(transformer, "_num_columns", []) or [])
    if transformer is None or not (cats or nums):
        return {}
    return {"as_categorical": cats, "dropped": [c for c in X.columns if c not in cats and c not in nums]}


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    job = load_job(args)
    import flaml
    from flaml import AutoML

    clock = Clock()  # fit time, imports excluded

    if job.metric == "rmsle":
        metric, metric_name = rmsle_metric, "rmsle (custom)"
    else:
        metric = FLAML_METRIC.get(job.metric, "auto")
        metric_name = metric if job.metric in FLAML_METRIC else f"auto (no FLAML metric for {job.metric})"
    task = "regression" if job.task_type == "regression" else "classification"
    X, y = job.features(job.train), job.labels()
    automl = AutoML()
    automl.fit(X_train=X, y_train=y, task=task, metric=metric, time_budget=job.budget_s, n_jobs=job.threads, verbose=1)
    fit_s = clock.lap()
    X_test = job.features(job.test)
    if job.kind in ("probability", "class_probabilities"):
        proba = pd.DataFrame(automl.predict_proba(X_test), columns=[str(c) for c in automl.classes_])
        write_submission(job, None, proba)
    else:
        write_submission(job, automl.predict(X_test))
    job.info.update(
        peer="flaml",
        version=flaml.__version__,
        task=task,
        metric=metric_name,
        best_estimator=automl.best_estimator,
        best_config=automl.best_config,
        best_loss=automl.best_loss,
        fit_s=fit_s,
        total_s=clock.lap(),
        n_features_in=X.shape[1],
        features_in=list(X.columns)[:50],
        **string_columns(automl, X),
    )
    save_info(job)
    print(f"flaml: best {automl.best_estimator}, fit {fit_s:.1f}s, wrote {job.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
