"""The constant prior floor of a task with several target columns: each column gets its own
target's best constant, so the floor a model must beat is as strong as a constant can be."""

from __future__ import annotations

import pandas as pd
import pytest

from mlguild.metrics import get_metric
from mlguild.scoring.floors import write_prior_submission
from mlguild.task.folder import TaskSpec


def _files(tmp_path, train: dict[str, list]) -> tuple:
    frame = pd.DataFrame({"id": [str(i) for i in range(len(next(iter(train.values()))))], **train})
    frame.to_csv(tmp_path / "train.csv", index=False)
    sample = pd.DataFrame({"id": ["a", "b", "c"], **{c: 0 for c in train}})
    sample.to_csv(tmp_path / "sample.csv", index=False)
    return tmp_path / "train.csv", tmp_path / "sample.csv", tmp_path / "prior.csv"


@pytest.mark.parametrize(
    ("metric", "expected"),
    [("mcrmse", {"u": 2.5, "v": 25.0}), ("mae", {"u": 2.0, "v": 20.0})],  # the mean, or the median for MAE
)
def test_each_regression_target_gets_its_own_constant(tmp_path, metric, expected):
    train, sample, dest = _files(tmp_path, {"u": [1, 2, 2, 5], "v": [10, 20, 20, 50]})
    spec = TaskSpec(
        name="t", task_type="regression", metric=metric, id_column="id",
        target_columns=["u", "v"], submission_columns=["id", "v", "u"],
    )  # fmt: skip
    assert write_prior_submission(spec, train, sample, dest)
    prior = pd.read_csv(dest)
    assert list(prior.columns) == ["id", "u", "v"]  # the sample's own columns, filled
    for column, value in expected.items():
        assert (prior[column] == value).all(), column


def test_each_label_column_gets_its_positive_share_or_its_most_common_label(tmp_path):
    train, sample, dest = _files(tmp_path, {"p": [1, 1, 1, 0], "q": [0, 0, 0, 1]})
    for metric, expected in (
        ("mean_columnwise_roc_auc", {"p": 0.75, "q": 0.25}),
        ("multilabel_f1_micro", {"p": 1, "q": 0}),
    ):
        spec = TaskSpec(
            name="t", task_type="binary", metric=metric, id_column="id", positive_label="1",
            target_columns=["p", "q"], submission_columns=["id", "p", "q"],
        )  # fmt: skip
        assert write_prior_submission(spec, train, sample, dest)
        prior = pd.read_csv(dest)
        for column, value in expected.items():
            assert (prior[column] == value).all(), (metric, column)
        assert get_metric(metric).prediction in ("probability", "label")


def test_no_prior_when_a_target_is_not_a_submission_column(tmp_path):
    train, sample, dest = _files(tmp_path, {"u": [1, 2], "v": [3, 4]})
    spec = TaskSpec(
        name="t", task_type="regression", metric="mcrmse", id_column="id",
        target_columns=["u", "v"], submission_columns=["id", "u", "w"],
    )  # fmt: skip
    assert not write_prior_submission(spec, train, sample, dest) and not dest.exists()
