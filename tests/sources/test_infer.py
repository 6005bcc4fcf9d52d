"""A competition folder without task.yaml (MLE-bench's prepared layout, or a Kaggle download's
flat one) runs as it is: the spec is inferred from the sample submission, the train and test
files and the description, written as task.yaml (the only file written there), and what
cannot be decided is asked for by name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import as_competition_folder, make_task, mlguild, one_line

from mlguild.core.errors import RunError, TaskError
from mlguild.sources.infer import infer_task, metric_from_description
from mlguild.task.folder import load_task

KEYS = ("task_type", "metric", "id_column", "target_columns", "submission_columns", "classes", "answers_file")


def snapshot(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "runs" not in p.relative_to(folder).parts
    }


@pytest.mark.parametrize("layout", ["mle", "flat"])
def test_each_example_is_inferred_as_its_own_task_yaml_says(example_tasks, tmp_path, layout):
    for name, example in example_tasks.items():
        truth = yaml.safe_load((example / "task.yaml").read_text())
        inferred = infer_task(as_competition_folder(example, tmp_path / name, layout))
        got = inferred.spec.model_dump()
        expected = {k: truth.get(k) for k in KEYS}
        if layout == "flat":
            expected["answers_file"] = None  # a Kaggle download has no answers
        assert {k: got[k] for k in KEYS} == expected, name
        assert any("metric" in n and "the description says" in n for n in inferred.notes)


@pytest.mark.parametrize(("name", "layout"), [("churn", "mle"), ("ames", "flat"), ("digits", "mle"), ("reviews", "flat"), ("titanic", "mle")])  # fmt: skip
def test_a_folder_without_task_yaml_runs_end_to_end_and_only_task_yaml_is_written(
    example_tasks, tmp_path, name, layout
):
    folder = as_competition_folder(example_tasks[name], tmp_path / "comp", layout)
    before = snapshot(folder)
    # started inside the folder, as a user who unpacked a download does: ./runs is left out of the data
    cwd = folder if layout == "flat" else tmp_path
    done = mlguild("run", str(folder), "--dry-run", "-n", "1", "--sandbox", "local", cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    out = one_line(done.stdout)
    assert "no task.yaml" in out and "inferred one" in out and "the description says" in out
    after = snapshot(folder)
    written = "prepared/task.yaml" if layout == "mle" else "task.yaml"
    assert set(after) - set(before) == {written}
    assert {k: v for k, v in after.items() if k != written} == before  # no other file changed
    runs = list((cwd / "runs").iterdir())
    assert len(runs) == 1
    manifest = json.loads((runs[0] / "manifest.json").read_text())
    shown = set(manifest["workspace"])
    assert not any(f.startswith(("runs/", "task.yaml", "private", "answers")) for f in shown), shown
    again = mlguild("run", str(folder), "--dry-run", "-n", "1", "--sandbox", "local", cwd=cwd)  # reads task.yaml now
    assert again.returncode == 0 and "inferred" not in again.stdout, again.stdout + again.stderr


def _flat_folder(root: Path, description: str, frame: pd.DataFrame, sample_cols: dict) -> Path:
    root.mkdir(parents=True)
    train, test = frame.iloc[40:], frame.iloc[:40]
    train.to_csv(root / "train.csv", index=False)
    test.drop(columns=[c for c in frame.columns if c not in ("id", "f1", "f2", "note")]).to_csv(
        root / "test.csv", index=False
    )
    pd.DataFrame({"id": test["id"], **sample_cols}).to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text(description)
    return root


def _frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "f1": rng.normal(size=n),
            "f2": rng.normal(size=n),
            "species": rng.choice(["ant", "bee", "wasp"], size=n),
            "weight": rng.normal(size=n),
        }
    )


def test_class_probability_columns_give_the_classes_and_a_multiclass_logloss(tmp_path):
    folder = _flat_folder(
        tmp_path / "bugs",
        "# Bugs\n## Evaluation\nSubmissions are scored on the multi-class logarithmic loss.\n",
        _frame().drop(columns=["weight"]),
        {"ant": 0.34, "bee": 0.33, "wasp": 0.33},
    )
    spec = infer_task(folder).spec
    assert (spec.task_type, spec.metric, spec.target_columns, spec.classes) == (
        "multiclass",
        "logloss",
        ["species"],
        ["ant", "bee", "wasp"],
    )


def test_what_cannot_be_decided_is_asked_for_by_name(tmp_path):
    no_metric = _flat_folder(tmp_path / "a", "# A task\nPredict the weight.\n", _frame(), {"weight": 0.0})
    with pytest.raises(TaskError) as err:
        infer_task(no_metric)
    assert "names no metric" in str(err.value) and "--metric" in (err.value.fix or "")
    assert infer_task(no_metric, metric="mae").spec.metric == "mae"

    # the sample predicts a column train lacks, and two train columns are missing from test
    two_candidates = _flat_folder(tmp_path / "b", "Scored by RMSE.\n", _frame(), {"answer": 0.0})
    with pytest.raises(TaskError) as err:
        infer_task(two_candidates)
    assert "cannot tell the target" in str(err.value) and "--target" in (err.value.fix or "")

    cli = mlguild("run", str(no_metric), "--dry-run", cwd=tmp_path)
    assert cli.returncode == 2 and "--metric" in one_line(cli.stderr), cli.stderr
    assert not (no_metric / "task.yaml").exists()  # nothing written when it could not decide


def test_a_free_text_metric_takes_the_one_missing_column_of_words_as_its_target(tmp_path):
    """chaii's convention: the sample predicts ``PredictionString``, train has ``answer_text`` and
    ``answer_start`` besides test's columns; a word-level Jaccard scores words, so the target is
    the one of them that holds words. With any other metric the two stay a question."""
    frame = _frame().drop(columns=["species", "weight"])
    frame["note"] = [f"context {i} with words" for i in range(len(frame))]
    frame["answer_text"] = [f"words {i}" for i in range(len(frame))]
    frame["answer_start"] = np.arange(len(frame)) % 17
    described = "The metric in this competition is the word-level Jaccard score.\n"
    folder = _flat_folder(tmp_path / "qa", described, frame, {"PredictionString": ""})
    spec = infer_task(folder).spec
    assert (spec.target_columns, spec.metric, spec.submission_columns) == (
        ["answer_text"],
        "jaccard_words",
        ["id", "PredictionString"],
    )
    numbers = _flat_folder(tmp_path / "qb", "Scored by RMSE.\n", frame, {"PredictionString": 0.0})
    with pytest.raises(TaskError, match="cannot tell the target"):
        infer_task(numbers)


def test_the_evaluation_section_decides_the_metric():
    text = "# Overview\nAccuracy matters to us.\n\n## Evaluation\nSubmissions are evaluated on MAP@12.\n## Prizes\nAUC"
    assert metric_from_description(text) == ("map_at_k", "MAP@12", {"k": 12})
    assert metric_from_description("We use the Root Mean Squared Logarithmic Error.")[0] == "rmsle"
    assert metric_from_description("root mean squared error between the two")[0] == "rmse"
    assert metric_from_description("the quadratic weighted kappa of the grades")[0] == "qwk"
    assert metric_from_description("nothing said here") is None


def test_unknown_keys_in_task_yaml_name_the_known_ones(tmp_path):
    task = make_task(tmp_path / "t")
    spec = yaml.safe_load((task / "task.yaml").read_text())
    (task / "task.yaml").write_text(yaml.safe_dump({**spec, "evaluation": "auc"}))
    with pytest.raises(TaskError) as err:
        load_task(task)
    message = str(err.value)
    assert "evaluation" in message and "known keys" in message and "target_columns" in message


def test_a_runs_folder_inside_the_data_is_refused(tmp_path):
    from mlguild.config import load_config
    from mlguild.rundir.folder import create_run

    task = load_task(make_task(tmp_path / "t"))
    with pytest.raises(RunError, match="inside the task's data folder"):
        create_run(task, load_config(None, []), task.public_dir / "runs")


def test_inference_ignores_runs_and_hidden_folders_inside_the_data(example_tasks, tmp_path):
    folder = as_competition_folder(example_tasks["churn"], tmp_path / "comp", "flat")
    for noise in ("runs/r/nodes/n0001/output", ".cache/x", "knowledge"):
        (folder / noise).mkdir(parents=True)
        (folder / noise / "submission_sample.csv").write_text("id,churn\n1,0.5\n")
        (folder / noise / "test.csv").write_text("id\n1\n")
    (folder / "sample_submission.csv").rename(folder / "sampleSubmission.csv")  # found by its word "sample"
    spec = infer_task(folder).spec
    assert (spec.sample_submission, spec.test_file, spec.train_file) == (
        "sampleSubmission.csv",
        "test.csv",
        "train.csv",
    )
