"""AutoGluon as a peer of mlguild: fit on all labelled rows within a time budget, predict the test rows.

Run with the AutoGluon venv's python (benchmarks/peers/setup.sh autogluon):

    .bench/autogluon/bin/python benchmarks/peers/run_autogluon.py --task TASK_DIR --budget 300 --out sub.csv

    .bench/autogluon/bin/python benchmarks/peers/run_autogluon.py ... --presets best_quality

Settings: ``TabularPredictor(label, problem_type, eval_metric=<the task metric or its closest
AutoGluon metric>).fit(train, time_limit=budget, presets=<--presets>, num_cpus=threads)``;
everything else is AutoGluon's default. ``medium_quality`` (the default here, the peer
``autogluon`` of vs_automl.py) has no bagging or stacking: it trains its "default" portfolio
(LightGBM x3, CatBoost, XGBoost, random forests, extra trees, a torch MLP and fastai) on an
internal holdout split, then a weighted ensemble. ``best_quality`` (the peer
``autogluon_best``) bags every model over k folds, stacks a second layer on their out-of-fold
predictions (with a dynamic-stacking check of whether stacking helps, on a quarter of the
time), then the weighted ensemble. RMSLE, which AutoGluon lacks, is passed as a custom scorer
(``autogluon.core.metrics.make_scorer``).

Text columns: AutoGluon's default feature generator recognises a free-text column (many
distinct values with several words each) and turns it into word n-gram counts (a
CountVectorizer, up to 10,000 features, pruned by feature selection) plus text statistics
(word count, character count, ...); the raw text goes to no model. Image arrays are plain
numeric pixel columns.
"""

from __future__ import annotations

import sys

import pandas as pd
from _common import Clock, load_job, parse_args, rmsle, save_info, write_submission

AG_METRIC = {
    "roc_auc": "roc_auc",
    "accuracy": "accuracy",
    "logloss": "log_loss",
    "binary_logloss": "log_loss",
    "f1": "f1",
    "f1_macro": "f1_macro",
    "rmse": "root_mean_squared_error",
    "mae": "mean_absolute_error",
    "r2": "r2",
    "qwk": "quadratic_kappa",
}


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], presets="medium_quality")
    job = load_job(args)
    import autogluon.tabular
    from autogluon.core.metrics import make_scorer
    from autogluon.tabular import TabularPredictor

    clock = Clock()  # fit time, imports excluded

    if job.metric == "rmsle":
        eval_metric = make_scorer("rmsle", rmsle, optimum=0.0, greater_is_better=False)
        metric_name = "rmsle (custom)"
    else:
        eval_metric = AG_METRIC.get(job.metric)
        metric_name = eval_metric or f"AutoGluon default (none for {job.metric})"
    train = job.features(job.train)
    train[job.target] = job.labels()
    predictor = TabularPredictor(
        label=job.target,
        problem_type=job.task_type,
        eval_metric=eval_metric,
        path=str(job.workdir / "autogluon_models"),
        verbosity=2,
    )
    predictor.fit(train, time_limit=job.budget_s, presets=args.presets, num_cpus=job.threads)
    fit_s = clock.lap()
    X_test = job.features(job.test)
    if job.kind in ("probability", "class_probabilities"):
        write_submission(job, None, pd.DataFrame(predictor.predict_proba(X_test)))
    else:
        write_submission(job, predictor.predict(X_test).to_numpy())
    board = predictor.leaderboard(silent=True)
    job.info.update(
        peer="autogluon",
        presets=args.presets,
        version=autogluon.tabular.__version__,
        problem_type=job.task_type,
        metric=metric_name,
        best_model=predictor.model_best,
        models=board[["model", "score_val", "fit_time"]].to_dict(orient="records"),
        fit_s=fit_s,
        total_s=clock.lap(),
        feature_types=predictor.feature_metadata_in.type_group_map_special
        if hasattr(predictor, "feature_metadata_in")
        else None,
    )
    save_info(job)
    print(f"autogluon: best {predictor.model_best}, fit {fit_s:.1f}s, wrote {job.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
