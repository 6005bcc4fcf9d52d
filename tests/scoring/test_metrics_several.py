"""The metrics of several target columns, named as competitions' graders name them, against
scikit-learn's own column-wise averages, and scored by the Scorer from real files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, log_loss, mean_squared_error, roc_auc_score

from mlguild.core.errors import ConfigError
from mlguild.metrics import get_metric, metric_name, per_column
from mlguild.scoring.scorer import Scorer
from mlguild.scoring.submission import load_answers
from mlguild.task.folder import TaskSpec

RNG = np.random.default_rng(0)
TRUTH = (RNG.random((200, 3)) > 0.6).astype(int)
PROBA = np.clip(TRUTH * 0.3 + RNG.random((200, 3)) * 0.7, 0.01, 0.99)


def test_column_wise_metrics_agree_with_scikit_learn():
    values, guesses = RNG.random((50, 2)) * 10, RNG.random((50, 2)) * 10
    rmse = np.mean([np.sqrt(mean_squared_error(values[:, j], guesses[:, j])) for j in range(2)])
    assert get_metric("mcrmse")(values, guesses) == pytest.approx(rmse)
    rmsle = np.mean([np.sqrt(mean_squared_error(np.log1p(values[:, j]), np.log1p(guesses[:, j]))) for j in range(2)])
    assert get_metric("mean_columnwise_rmsle")(values, guesses) == pytest.approx(rmsle)
    assert get_metric("mean_columnwise_roc_auc")(TRUTH, PROBA) == pytest.approx(roc_auc_score(TRUTH, PROBA))
    losses = np.mean([log_loss(TRUTH[:, j], PROBA[:, j]) for j in range(3)])
    assert get_metric("mean_columnwise_logloss")(TRUTH, PROBA) == pytest.approx(losses)
    labels, guessed = TRUTH.astype(str), (PROBA > 0.5).astype(int).astype(str)
    for name, average in (("multilabel_f1_micro", "micro"), ("multilabel_f1_macro", "macro")):
        expected = f1_score(TRUTH, (PROBA > 0.5).astype(int), average=average)
        assert get_metric(name)(labels, guessed, positive_label="1") == pytest.approx(expected), name


def test_names_users_type_for_them():
    for typed, name in {
        "MCRMSE": "mcrmse",
        "mean column-wise RMSE": "mcrmse",
        "mean-columnwise-rmsle": "mean_columnwise_rmsle",
        "mean column-wise AUC": "mean_columnwise_roc_auc",
        "mean_columnwise_log_loss": "mean_columnwise_logloss",
        "micro-F1": "multilabel_f1_micro",
        "multilabel macro f1": "multilabel_f1_macro",
    }.items():
        assert metric_name(typed) == name, typed
    assert per_column("mean_columnwise_roc_auc") == "roc_auc" and per_column("rmse") == "rmse"
    with pytest.raises(ConfigError, match="did you mean 'mcrmse'"):
        metric_name("mcrmsee")


def test_the_scorer_scores_a_multi_label_submission_cell_by_cell(tmp_path):
    ids = [f"{i:03d}" for i in range(len(TRUTH))]
    columns = ["toxic", "obscene", "insult"]
    pd.DataFrame({"id": ids, **{c: TRUTH[:, j] for j, c in enumerate(columns)}}).to_csv(tmp_path / "a.csv", index=False)
    guessed = (PROBA > 0.5).astype(int)
    sub = pd.DataFrame({"id": ids[::-1], **{c: guessed[::-1, j] for j, c in enumerate(columns)}})  # any row order
    sub.to_csv(tmp_path / "sub.csv", index=False)
    for metric, average in (("multilabel_f1_micro", "micro"), ("multilabel_f1_macro", "macro")):
        spec = TaskSpec(
            name="t", task_type="binary", metric=metric, id_column="id", positive_label="1",
            target_columns=columns, submission_columns=["id", *columns],
        )  # fmt: skip
        scorer = Scorer(spec, answers=load_answers(tmp_path / "a.csv", "id"))
        assert scorer.score(tmp_path / "sub.csv").value == pytest.approx(f1_score(TRUTH, guessed, average=average))


def test_a_label_column_with_one_class_is_left_out_of_the_mean_column_wise_auc():
    # a rare label with no positive among these rows (a small holdout): its AUC is undefined
    truth, proba = TRUTH.copy(), PROBA.copy()
    truth[:, 2] = 0
    expected = roc_auc_score(truth[:, :2], proba[:, :2])
    assert get_metric("mean_columnwise_roc_auc")(truth, proba) == pytest.approx(expected)
    with pytest.raises(ValueError, match="undefined on every column"):
        get_metric("mean_columnwise_roc_auc")(np.zeros_like(truth), proba)
    with pytest.raises(ValueError, match="one class"):  # roc_auc keeps its own rule
        get_metric("roc_auc")(truth, proba)
