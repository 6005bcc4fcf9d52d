"""Metrics registered from competitions' own definitions (MLE-bench's graders): the word-level
Jaccard score, IceCube's mean angular error, RSNA's probabilistic F1 and lmsys' log loss over
one-hot outcome columns, each against the definition written out as the grader writes it (or
scikit-learn's, where the grader calls it), and scored by the Scorer from real files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import jaccard_score, log_loss
from sklearn.preprocessing import MultiLabelBinarizer

from mlguild.metrics import get_metric
from mlguild.scoring.scorer import Scorer
from mlguild.scoring.submission import load_answers
from mlguild.task.folder import TaskSpec

RNG = np.random.default_rng(3)
WORDS = "the a good bad day night very not so It's".split()


def _texts(n: int) -> list[str]:
    return [" ".join(RNG.choice(WORDS, size=RNG.integers(1, 6))) for _ in range(n)]


def test_word_jaccard_is_the_samples_averaged_jaccard_of_lower_cased_word_sets():
    truth, guess = _texts(60), _texts(60)
    guess[:10] = [t.upper() for t in truth[:10]]  # case does not count
    sets_true = [set(t.lower().split()) for t in truth]
    sets_pred = [set(p.lower().split()) for p in guess]
    binarizer = MultiLabelBinarizer(classes=sorted(set().union(*sets_true, *sets_pred)))
    expected = jaccard_score(binarizer.fit_transform(sets_true), binarizer.transform(sets_pred), average="samples")
    assert get_metric("jaccard_words")(truth, guess) == pytest.approx(expected)
    assert get_metric("jaccard_words")(["Good day", "bad"], ["good DAY sir", "bad"]) == pytest.approx((2 / 3 + 1) / 2)
    assert get_metric("jaccard_words")([""], [""]) == 0.0  # no word on either side


def _angular_reference(az_true, zen_true, az_pred, zen_pred):
    """The grader's formula: both directions as unit vectors, the arc cosine of their product."""
    scalar = np.sin(zen_true) * np.sin(zen_pred) * (
        np.cos(az_true) * np.cos(az_pred) + np.sin(az_true) * np.sin(az_pred)
    ) + np.cos(zen_true) * np.cos(zen_pred)
    return float(np.mean(np.abs(np.arccos(np.clip(scalar, -1, 1)))))


def test_angular_distance_is_the_mean_angle_between_the_directions():
    truth = np.column_stack([RNG.uniform(0, 2 * np.pi, 100), RNG.uniform(0, np.pi, 100)])
    guess = truth + RNG.normal(0, 0.3, truth.shape)
    metric = get_metric("angular_distance")
    assert metric(truth, guess) == pytest.approx(_angular_reference(*truth.T, *guess.T))
    assert metric(truth, truth) == pytest.approx(0.0, abs=1e-7)
    opposite = np.array([[0.0, 0.0]]), np.array([[1.0, np.pi]])  # the pole and the other pole
    assert metric(*opposite) == pytest.approx(np.pi)
    with pytest.raises(ValueError, match="azimuth, zenith"):
        metric(truth[:, :1], guess[:, :1])


def _pfbeta_reference(labels, predictions):
    true_count = tp = fp = 0.0
    for label, prediction in zip(labels, predictions, strict=True):
        prediction = min(max(prediction, 0), 1)
        if label:
            true_count += 1
            tp += prediction
        else:
            fp += prediction
    precision, recall = tp / (tp + fp), tp / true_count
    return 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0


def test_probabilistic_f1_counts_each_probability_as_a_share_of_a_positive():
    labels = (RNG.random(200) < 0.1).astype(int)
    predictions = np.clip(labels * 0.4 + RNG.random(200) * 0.5 - 0.05, -0.1, 1.1)  # some outside [0, 1]
    metric = get_metric("pf1")
    assert metric(labels, predictions) == pytest.approx(_pfbeta_reference(labels, predictions))
    assert metric(np.array([1, 0]), np.array([0.0, 0.7])) == 0.0
    with pytest.raises(ValueError, match="no positive"):
        metric(np.zeros(5, dtype=int), np.full(5, 0.5))


def test_logloss_columns_is_scikit_learns_log_loss_of_the_column_holding_the_one():
    """lmsys' grader: ``log_loss`` of the one-hot answers against the three probability columns."""
    truth = np.eye(3)[RNG.integers(0, 3, 200)]
    guess = RNG.dirichlet([1, 1, 1], 200)
    metric = get_metric("logloss_columns")
    assert metric(truth, guess) == pytest.approx(log_loss(truth.argmax(axis=1), guess, labels=[0, 1, 2]), rel=1e-6)
    # a zero probability is raised to 1e-15 (as mlguild's logloss does; scikit-learn's eps is 2.2e-16)
    assert metric(np.array([[1, 0]]), np.array([[0.0, 1.0]])) == pytest.approx(-np.log(1e-15), rel=1e-6)
    assert metric(truth, guess * 3) == pytest.approx(metric(truth, guess))  # rows normalised to sum 1
    with pytest.raises(ValueError, match="exactly one 1"):
        metric(np.array([[1, 1, 0]]), np.array([[0.5, 0.5, 0.0]]))


def test_the_scorer_scores_text_and_direction_submissions_from_files(tmp_path):
    ids = [f"t{i}" for i in range(40)]
    truth, guess = _texts(40), _texts(40)
    pd.DataFrame({"textID": ids, "selected_text": truth}).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"textID": ids[::-1], "selected_text": guess[::-1]}).to_csv(tmp_path / "sub.csv", index=False)
    spec = TaskSpec(
        name="t", task_type="multiclass", metric="jaccard_words", id_column="textID",
        target_columns=["selected_text"], submission_columns=["textID", "selected_text"],
    )  # fmt: skip
    scorer = Scorer(spec, answers=load_answers(tmp_path / "a.csv", "textID"))
    assert scorer.score(tmp_path / "sub.csv").value == pytest.approx(get_metric("jaccard_words")(truth, guess))

    directions = np.column_stack([RNG.uniform(0, 6, 40), RNG.uniform(0, 3, 40)])
    predicted = directions + 0.2
    pd.DataFrame({"event_id": ids, "azimuth": directions[:, 0], "zenith": directions[:, 1]}).to_csv(
        tmp_path / "d.csv", index=False
    )
    pd.DataFrame({"event_id": ids, "azimuth": predicted[:, 0], "zenith": predicted[:, 1]}).to_csv(
        tmp_path / "dsub.csv", index=False
    )
    spec = TaskSpec(
        name="t", task_type="regression", metric="angular_distance", id_column="event_id",
        target_columns=["azimuth", "zenith"], submission_columns=["event_id", "azimuth", "zenith"],
    )  # fmt: skip
    scorer = Scorer(spec, answers=load_answers(tmp_path / "d.csv", "event_id"))
    expected = _angular_reference(*directions.T, *predicted.T)
    assert scorer.score(tmp_path / "dsub.csv").value == pytest.approx(expected, rel=1e-6)


def test_a_metric_over_a_number_of_targets_refuses_a_task_of_another():
    from mlguild.core.errors import TaskError
    from mlguild.sources.metric_checks import refuse_target_count

    refuse_target_count("angular_distance", ["azimuth", "zenith"], "comp")
    refuse_target_count("kl_divergence", ["a", "b", "c"], "comp")
    refuse_target_count("rmse", ["y"], "comp")
    for metric, targets in (("angular_distance", ["zenith"]), ("kl_divergence", ["votes"])):
        with pytest.raises(TaskError, match=f"the metric {metric} .* the task has 1") as refused:
            refuse_target_count(metric, targets, "comp")
        assert "--metric NAME" in refused.value.fix


def _champs_reference(truth, predicted, types):
    """MLE-bench's champs grader: the log of each coupling type's MAE, averaged over the types."""
    frame = pd.DataFrame({"t": truth, "p": predicted, "type": types})
    return float(np.mean([np.log(np.mean(np.abs(g["t"] - g["p"]))) for _, g in frame.groupby("type")]))


def test_group_log_mae_averages_each_groups_log_mae_and_resamples_within_the_groups(tmp_path):
    types = np.array(["1JHC", "2JHH", "3JHC"])[RNG.integers(0, 3, 300)]
    scale = pd.Series(types).map({"1JHC": 100.0, "2JHH": 10.0, "3JHC": 1.0}).to_numpy()
    truth = RNG.normal(0, 1, 300) * scale
    guess = truth + RNG.normal(0, 0.1, 300) * scale
    metric = get_metric("group_log_mae")
    assert metric(truth, guess, groups=types) == pytest.approx(_champs_reference(truth, guess, types))
    # a 1% smaller error in the smallest group gains as much as in the largest
    better_small = np.where(types == "3JHC", truth + (guess - truth) * 0.99, guess)
    better_large = np.where(types == "1JHC", truth + (guess - truth) * 0.99, guess)
    assert metric(truth, better_small, groups=types) == pytest.approx(metric(truth, better_large, groups=types))
    assert metric(truth, truth, groups=types) == pytest.approx(np.log(1e-9))  # the floor, not -inf

    ids = [f"r{i}" for i in range(300)]
    pd.DataFrame({"id": ids, "type": types, "y": truth}).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"id": ids, "y": guess}).to_csv(tmp_path / "sub.csv", index=False)
    spec = TaskSpec(
        name="t", task_type="regression", metric="group_log_mae", metric_params={"group_column": "type"},
        id_column="id", target_columns=["y"], submission_columns=["id", "y"],
    )  # fmt: skip
    scorer = Scorer(spec, answers=load_answers(tmp_path / "a.csv", "id"))
    assert scorer.score(tmp_path / "sub.csv").value == pytest.approx(_champs_reference(truth, guess, types))
    # the bootstrap keeps the three types and draws rows within each: a spread near each type's
    # noise, where drawing whole types (three of them) would swing by whole log units
    assert 0 < scorer.spread(tmp_path / "sub.csv") < 0.2
    with pytest.raises(ValueError, match="none is named"):
        TaskSpec(
            name="t", task_type="regression", metric="group_log_mae", id_column="id",
            target_columns=["y"], submission_columns=["id", "y"],
        )  # fmt: skip
