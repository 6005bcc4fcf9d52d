"""A competition folder whose tables are NumPy arrays (ml2021spring-hw2's train_11.npy,
train_label_11.npy and test_11.npy; a course's X_train.npy, y_train.npy, X_test.npy): they become
the task's CSV tables in the converted folder, the arrays left out, and the task runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

from mlguild.core.errors import TaskError
from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task


def arrays_folder(root, n_train: int = 300, n_test: int = 100, columns: int = 5):
    """Labels that follow the first two inputs; the answers in private/."""
    rng = np.random.default_rng(0)
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    (public / "timit_11").mkdir(parents=True)
    private.mkdir(parents=True)
    x = rng.normal(size=(n_train + n_test, columns)).astype(np.float32)
    y = np.where(x[:, 0] + x[:, 1] > 0, "36", "7")
    np.save(public / "timit_11" / "train_11.npy", x[:n_train])
    np.save(public / "timit_11" / "train_label_11.npy", y[:n_train])
    np.save(public / "timit_11" / "test_11.npy", x[n_train:])
    pd.DataFrame({"Id": range(n_test), "ClassId": 0}).to_csv(public / "sampleSubmission.csv", index=False)
    pd.DataFrame({"Id": range(n_test), "ClassId": y[n_train:]}).to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text("# hw2\n\n- Evaluation metric: catagorization accuracy\n")
    return root, x, y


def test_the_arrays_become_the_tables_and_are_left_out(tmp_path):
    folder, x, y = arrays_folder(tmp_path / "hw2", n_train=30, n_test=10)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.metric, spec.task_type) == (
        "Id",
        ["ClassId"],
        "accuracy",
        "binary",
    )
    assert any("NumPy arrays of 30 train rows of 5 inputs" in note for note in inferred.notes)
    task = folder_task(folder, None, None)
    train = pd.read_csv(task.train_path, dtype={"ClassId": str})
    test = pd.read_csv(task.test_path)
    assert list(train.columns) == ["Id", "f0", "f1", "f2", "f3", "f4", "ClassId"] and len(train) == 30
    assert np.allclose(train[[f"f{j}" for j in range(5)]].to_numpy(), x[:30]) and list(train["ClassId"]) == list(y[:30])
    assert list(test["Id"]) == list(range(10)) and np.allclose(test.iloc[:, 1:].to_numpy(), x[30:])
    assert not list(task.public_dir.rglob("*.npy"))  # the labels' array would show the holdout's labels
    # a test array of another length than the sample's is no such folder
    np.save(folder / "prepared" / "public" / "timit_11" / "test_11.npy", x[30:35])
    with pytest.raises(TaskError, match="cannot tell which file is the train file"):
        infer_task(folder)


@pytest.mark.slow
def test_an_arrays_task_runs_to_a_graded_submission(tmp_path):
    folder, _, _ = arrays_folder(tmp_path / "hw2")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["metric"] == "accuracy" and grade["test_score"] > 0.85
