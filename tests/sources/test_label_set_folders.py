"""A target that holds a set of labels a row, space-separated, scored by an F1 over the sets'
labels (iMet's ``attribute_ids``, plant-pathology-2021's ``labels``, Facebook's ``Tags``): the
metric computes what MLE-bench's graders compute, inference names it from the description and
the column, refuses the readings it cannot tell apart, and a run grades what the grader would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlguild.core.errors import SubmissionError, TaskError
from mlguild.metrics import get_metric, metric_name
from mlguild.scoring.scorer import Scorer
from mlguild.sources.infer import infer_task
from mlguild.task.folder import TaskSpec

F1_SETS = get_metric("f1_sets")


def _mlebench_micro_f1(truth: list[str], predicted: list[str]) -> float:
    """plant-pathology-2021's and imet-2020's grade.py: classes from the answers, sets binarised."""
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    classes = sorted({label for text in truth for label in text.split()})
    binarise = MultiLabelBinarizer(classes=classes, sparse_output=True)
    y_true = binarise.fit_transform([t.split() for t in truth])
    with pytest.warns(UserWarning) if any(set(p.split()) - set(classes) for p in predicted) else nullcontext():
        y_pred = binarise.transform([p.split() for p in predicted])
    return float(f1_score(y_true, y_pred, average="micro"))


def test_f1_sets_is_the_graders_micro_f1_and_f1_sets_mean_kaggles_mean():
    rng = np.random.default_rng(3)
    labels = ["a", "b", "c", "d", "e"]
    truth = [" ".join(rng.choice(labels, size=rng.integers(1, 4), replace=False)) for _ in range(60)]
    predicted = [" ".join(rng.choice(labels + ["zz"], size=rng.integers(0, 4), replace=False)) for _ in range(60)]
    got = F1_SETS([t.split() for t in truth], [p.split() for p in predicted])
    assert got == pytest.approx(_mlebench_micro_f1(truth, predicted))  # "zz", in no true set, is not counted
    mean = get_metric("f1_sets_mean")
    # rows: {a,b} vs {a} -> 2/3; {c} vs {} -> 0; {} vs {} -> 1
    assert mean([["a", "b"], ["c"], []], [["a"], [], []]) == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert metric_name("label set f1") == "f1_sets" and metric_name("mean_f1_sets") == "f1_sets_mean"


def test_a_set_naming_a_label_twice_is_refused(tmp_path):
    spec = TaskSpec(
        name="leaves", task_type="multiclass", metric="f1_sets", id_column="image",
        target_columns=["labels"], submission_columns=["image", "labels"],
    )  # fmt: skip
    answers = tmp_path / "answers.csv"
    answers.write_text("image,labels\na,scab\nb,rust scab\nc,healthy\n")
    scorer = Scorer.from_file(spec, answers)
    good = tmp_path / "good.csv"
    good.write_text("image,labels\na,scab\nb,scab rust\nc,\n")  # order within a set does not matter
    assert scorer.score(good).value == pytest.approx(2 * 3 / (2 * 3 + 0 + 1))
    twice = tmp_path / "twice.csv"
    twice.write_text("image,labels\na,scab scab\nb,rust\nc,healthy\n")
    with pytest.raises(SubmissionError) as err:
        scorer.score(twice)
    assert err.value.reason == "duplicate_item" and "the label set names 'scab' more than once" in err.value.message


def leaves_folder(root: Path, evaluation: str, labels: list[str] | None = None, n: int = 120) -> Path:
    """A competition folder as MLE-bench prepares plant-pathology-2021's: train.csv with a
    ``labels`` column of sets, test.csv, a sample submission of one label, private answers."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    names = labels or ["scab", "rust", "frog_eye_leaf_spot"]
    sets = []
    for row in x:
        held = [name for name, value in zip(names, row, strict=False) if value > 0.2]
        sets.append(" ".join(held) or "healthy")
    frame = pd.DataFrame({"image": [f"{i:04x}.jpg" for i in range(n)], "x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2]})
    frame["labels"] = sets
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    cut = n * 3 // 4
    frame.iloc[:cut].to_csv(public / "train.csv", index=False)
    frame.iloc[cut:].drop(columns="labels").to_csv(public / "test.csv", index=False)
    frame.iloc[cut:][["image", "labels"]].to_csv(private / "test.csv", index=False)
    sample = pd.DataFrame({"image": frame["image"].iloc[cut:], "labels": "healthy"})
    sample.to_csv(public / "sample_submission.csv", index=False)
    (public / "description.md").write_text(f"# Leaves\n\n## Evaluation\n\n{evaluation}\n")
    return root


def test_an_f1_over_a_column_of_label_sets_is_f1_sets(tmp_path):
    inferred = infer_task(
        leaves_folder(tmp_path / "imet", "Submissions are evaluated on their micro averaged F1 score.")
    )
    spec = inferred.spec
    assert (spec.target_columns, spec.metric, spec.task_type) == (["labels"], "f1_sets", "multiclass")
    assert any("holds space-separated sets of labels" in note for note in inferred.notes)


def test_class_names_with_spaces_are_one_label_each_not_a_set(tmp_path):
    # plant-seedlings-classification: "Sugar beet", "Common wheat": its micro F1 is accuracy
    folder = leaves_folder(tmp_path / "seedlings", "Submissions are evaluated on their micro averaged F1 score.", n=120)
    train = folder / "prepared" / "public" / "train.csv"
    frame = pd.read_csv(train)
    names = ["Sugar beet", "Common wheat", "Common Chickweed", "Black-grass"]
    frame["labels"] = [names[i % 4] for i in range(len(frame))]
    frame.to_csv(train, index=False)
    assert infer_task(folder).spec.metric == "accuracy"


def test_the_readings_of_an_f1_over_sets_that_cannot_be_told_apart_are_refused(tmp_path):
    mean = leaves_folder(tmp_path / "mean", "The evaluation metric for this competition is Mean F1-Score.")
    # in MLE-bench's layout its graders settle Mean F1 over sets: the micro F1 of the pooled labels
    inferred = infer_task(mean)
    assert inferred.spec.metric == "f1_sets"
    assert any("micro F1 of the pooled labels its graders compute" in note for note in inferred.notes)
    # a Kaggle download (the files side by side, no public/ and private/): which one is meant is open
    kaggle = tmp_path / "kaggle"
    shutil.copytree(mean / "prepared" / "public", kaggle)
    with pytest.raises(TaskError) as err:
        infer_task(kaggle)
    assert "ambiguous" in err.value.message and "f1_sets_mean" in err.value.message
    assert "--metric f1_sets" in err.value.fix
    macro = leaves_folder(tmp_path / "macro", "Submissions are evaluated on their macro F1 score.")
    with pytest.raises(TaskError) as err:
        infer_task(macro)
    assert "macro F1 over the sets' labels" in err.value.message and "f1_sets_mean" in err.value.fix


@pytest.mark.slow
def test_a_label_set_folder_runs_to_the_grade_mlebench_would_give(tmp_path):
    folder = leaves_folder(tmp_path / "leaves", "Submissions are evaluated on their micro averaged F1 score.", n=400)
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-m", "mlguild", "run", str(folder), "--brain", "recipes", "-n", "2", "--no-memory",
         "--runs-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=600, env={"MLGUILD_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run = next((tmp_path / "runs").iterdir())
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    grade = next(e for e in events if e["type"] == "final_graded")
    submission = pd.read_csv(run / "final" / "submission.csv", dtype=str, keep_default_na=False)
    answers = pd.read_csv(folder / "prepared" / "private" / "test.csv", dtype=str)
    aligned = submission.set_index("image").loc[answers["image"], "labels"].tolist()
    assert grade["metric"] == "f1_sets"
    assert grade["test_score"] == pytest.approx(_mlebench_micro_f1(answers["labels"].tolist(), aligned))
    constant = _mlebench_micro_f1(answers["labels"].tolist(), ["healthy"] * len(answers))
    assert grade["test_score"] > constant + 0.2
