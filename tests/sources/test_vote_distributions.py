"""Votes spread over several columns, scored by the mean KL divergence of each row's predicted
distribution from its votes (hms-harmful-brain-activity-classification's metric): the metric is
Kaggle's, a description that names it gives the task, and a run ends in a graded submission
better than predicting the votes' overall shares."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild
from scipy.special import rel_entr

from mlguild.metrics import get_metric
from mlguild.sources.infer import infer_task

VOTES = ["seizure_vote", "lpd_vote", "other_vote"]


def test_the_kl_divergence_is_scipys_on_rows_normalised_to_distributions():
    rng = np.random.default_rng(0)
    votes = rng.integers(0, 5, size=(50, 3)) + np.eye(3)[rng.integers(0, 3, 50)]  # every row has a vote
    guess = rng.random((50, 3))
    truth, predicted = votes / votes.sum(1, keepdims=True), guess / guess.sum(1, keepdims=True)
    expected = float(np.mean(rel_entr(truth, predicted).sum(1)))
    assert get_metric("kl_divergence")(votes, guess) == pytest.approx(expected)
    assert get_metric("kl_divergence")(votes, votes) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="positive sum"):
        get_metric("kl_divergence")(np.zeros((2, 3)), guess[:2])


def votes_folder(root, n_train: int = 400, n_test: int = 100):
    """A competition folder of votes that follow two inputs; the private answers beside it."""
    rng = np.random.default_rng(1)
    n = n_train + n_test
    x = rng.normal(size=(n, 2))
    logits = np.stack([2 * x[:, 0], 2 * x[:, 1], np.zeros(n)], axis=1)
    shares = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    votes = np.stack([rng.multinomial(6, p) for p in shares])
    frame = pd.DataFrame({"eeg_id": np.arange(n) + 1000, "x0": x[:, 0].round(4), "x1": x[:, 1].round(4)})
    frame[VOTES] = votes
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    frame[:n_train].to_csv(public / "train.csv", index=False)
    frame[n_train:][["eeg_id", "x0", "x1"]].to_csv(public / "test.csv", index=False)
    frame[n_train:][["eeg_id"]].assign(**{v: 1 / 3 for v in VOTES}).to_csv(
        public / "sample_submission.csv", index=False
    )
    frame[n_train:][["eeg_id", *VOTES]].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(
        "# votes\n\n## Evaluation\n\nSubmissions are evaluated on the Kullback Liebler divergence between the "
        "predicted probability and the observed target.\n"
    )
    return root, frame[:n_train][VOTES].to_numpy(), frame[n_train:][VOTES].to_numpy()


def test_a_description_naming_it_gives_the_several_target_task(tmp_path):
    folder, _, _ = votes_folder(tmp_path / "hms")
    spec = infer_task(folder).spec
    assert (spec.target_columns, spec.metric) == (VOTES, "kl_divergence")


@pytest.mark.slow
def test_a_votes_task_runs_to_a_graded_submission_better_than_the_overall_shares(tmp_path):
    folder, train_votes, test_votes = votes_folder(tmp_path / "hms")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "2", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    shares = np.tile(train_votes.sum(0) / train_votes.sum(), (len(test_votes), 1))
    assert grade["valid"] and grade["metric"] == "kl_divergence"
    assert grade["test_score"] < get_metric("kl_divergence")(test_votes, shares)  # the inputs were used
