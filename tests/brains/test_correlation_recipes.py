"""Tasks scored by a correlation run end to end with the recipe brain: one target scored by
Pearson's r (us-patent-phrase-to-phrase-matching's grader), several scored by the mean
column-wise Spearman (google-quest-challenge's), each a folder without task.yaml as a user has
it, inferred from its description, graded once on its test answers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

CASES = {
    "pearson": (["score"], "Submissions are evaluated on the Pearson correlation coefficient between the scores."),
    "mean_columnwise_spearman": (
        ["helpful", "well_written"],
        "Submissions are evaluated on the mean column-wise Spearman's correlation coefficient.",
    ),
}


def correlation_folder(root, targets: list[str], evaluation: str, n_train: int = 240, n_test: int = 80):
    rng = np.random.default_rng(1)
    n = n_train + n_test
    x = rng.normal(size=(n, 3))
    frame = pd.DataFrame({"id": [f"r{i:04d}" for i in range(n)], "a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})
    for j, target in enumerate(targets):  # a value in [0, 1] that rises with a (and b), with noise
        signal = x[:, 0] + (j + 1) * 0.5 * x[:, 1] + rng.normal(scale=0.5, size=n)
        frame[target] = np.round(1 / (1 + np.exp(-signal)), 3)
    public, private = root / "public", root / "private"
    public.mkdir(parents=True)
    private.mkdir()
    frame[:n_train].to_csv(public / "train.csv", index=False)
    frame[n_train:].drop(columns=targets).to_csv(public / "test.csv", index=False)
    frame[n_train:][["id"]].assign(**dict.fromkeys(targets, 0.5)).to_csv(public / "sample_submission.csv", index=False)
    frame[n_train:][["id", *targets]].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(f"# Scores\n\n## Evaluation\n\n{evaluation}\n")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("metric", sorted(CASES))
def test_a_correlation_task_runs_to_a_graded_submission(tmp_path, metric):
    targets, evaluation = CASES[metric]
    folder = correlation_folder(tmp_path / "scores", targets, evaluation)
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"metric {metric}" in " ".join(done.stdout.split())
    run = tmp_path / "runs" / "r"
    submission = pd.read_csv(run / "final" / "submission.csv")
    assert list(submission.columns) == ["id", *targets] and len(submission) == 80
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["metric"] == metric
    assert grade["test_score"] > 0.6  # the signal is strong: a constant scores 0
