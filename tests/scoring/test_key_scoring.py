"""The scorer on every key convention (issue 37, item 1): a row id beside a group column (the
metric within the group, rows matched by id in any order), a ranked file (no score column:
a row's place among its group's rows is its score; groups and rows in any order; repeated
(group, item) pairs matched in their order), and the mean of GAUC and nDCG@5, which is the
mean of the two registered metrics on the same rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlguild.core.errors import ConfigError, SubmissionError
from mlguild.metrics import get_metric, metric_name
from mlguild.scoring.scorer import Scorer
from mlguild.task.spec import TaskSpec


def _answers() -> pd.DataFrame:
    """Three users, their impressions; u0 sees v1 twice (a repeated pair)."""
    rows = [
        ("r0", "u0", "v1", "1"), ("r1", "u0", "v2", "0"), ("r2", "u0", "v1", "0"), ("r3", "u0", "v3", "0"),
        ("r4", "u1", "v1", "0"), ("r5", "u1", "v4", "1"), ("r6", "u1", "v5", "0"),
        ("r7", "u2", "v2", "1"), ("r8", "u2", "v3", "1"), ("r9", "u2", "v6", "0"),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["id", "user", "video", "watched"])


def _spec(**over) -> TaskSpec:
    fields = dict(
        name="videos", task_type="ranking", metric="gauc", id_column="id", group_column="user",
        key_columns=["user", "video"], target_columns=["watched"], submission_columns=["id", "user", "video", "score"],
        positive_label="1",
    )  # fmt: skip
    return TaskSpec(**{**fields, **over})


def _write(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_a_row_id_beside_a_group_column_is_scored_within_the_group_in_any_row_order(tmp_path):
    answers = _answers()
    scorer = Scorer(_spec(), answers=answers)
    scores = np.array([0.9, 0.1, 0.2, 0.3, 0.2, 0.8, 0.1, 0.7, 0.6, 0.65])
    sub = answers[["id", "user", "video"]].assign(score=scores)
    value = scorer.score(_write(tmp_path / "a.csv", sub)).value
    truth = (answers["watched"] == "1").astype(int).to_numpy()
    assert value == pytest.approx(get_metric("gauc")(truth, scores, groups=answers["user"].to_numpy()))
    # Within u2 0.65 ranks the unwatched v6 between the watched ones: not perfect, and not pooled AUC.
    assert value == pytest.approx((1.0 + 1.0 + 0.5) / 3)
    shuffled = sub.sample(frac=1.0, random_state=3)  # unique ids: any order is the same submission
    assert scorer.score(_write(tmp_path / "b.csv", shuffled)).value == pytest.approx(value)
    wrong = sub.assign(user=sub["user"].where(sub["id"] != "r4", "u9"))
    with pytest.raises(SubmissionError) as err:
        scorer.score(_write(tmp_path / "c.csv", wrong))
    assert err.value.reason == "key_mismatch" and "u9" in str(err.value)


def _ranked_spec() -> TaskSpec:
    return TaskSpec(
        name="hotels", task_type="ranking", metric="ndcg_at_k", metric_params={"k": 3}, id_column="user",
        ids_unique=False, key_columns=["video"], target_columns=["watched"], submission_columns=["user", "video"],
        ranked_file=True,
    )  # fmt: skip


def test_a_ranked_file_is_scored_by_each_rows_place_in_its_group(tmp_path):
    answers = _answers()[["user", "video", "watched"]].drop(index=2).reset_index(drop=True)  # no repeated pair
    scorer = Scorer(_ranked_spec(), answers=answers)
    truth = answers["watched"].astype(float).to_numpy()
    best = answers.assign(t=truth).sort_values(["user", "t"], ascending=[True, False], kind="stable")
    perfect = scorer.score(_write(tmp_path / "best.csv", best[["user", "video"]])).value
    assert perfect == pytest.approx(1.0)
    worst = answers.assign(t=truth).sort_values(["user", "t"], ascending=[True, True], kind="stable")
    low = scorer.score(_write(tmp_path / "worst.csv", worst[["user", "video"]])).value
    assert low < 0.8
    # What the ranked file scores is what a score column in that order would score.
    place = -worst.groupby("user", sort=False).cumcount().to_numpy(dtype=float)
    by_position = pd.Series(place, index=worst.index).loc[answers.index].to_numpy()
    expected = get_metric("ndcg_at_k")(truth, by_position, groups=answers["user"].to_numpy(), k=3)
    assert low == pytest.approx(expected)
    # Groups may come in any order, and a group's rows need not be contiguous.
    mixed = pd.concat([best[best["user"] == "u2"], best[best["user"] != "u2"]])
    assert scorer.score(_write(tmp_path / "mixed.csv", mixed[["user", "video"]])).value == pytest.approx(1.0)
    scorer.validate(tmp_path / "mixed.csv")


def test_a_repeated_pair_in_a_ranked_file_is_matched_in_its_order(tmp_path):
    answers = _answers()[["user", "video", "watched"]]
    scorer = Scorer(_ranked_spec(), answers=answers)
    # u0's first (u0, v1) row was watched, its second was not: listing v1 first, twice, puts
    # the first occurrence (watched) first.
    rows = [("u0", "v1"), ("u0", "v1"), ("u0", "v2"), ("u0", "v3"), ("u1", "v4"), ("u1", "v1"), ("u1", "v5")]
    rows += [("u2", "v2"), ("u2", "v3"), ("u2", "v6")]
    sub = pd.DataFrame(rows, columns=["user", "video"])
    assert scorer.score(_write(tmp_path / "rep.csv", sub)).value == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("change", "reason", "words"),
    [
        (lambda s: s.iloc[1:], "missing_ids", "has 3 row(s) in the file, expected 4"),
        (lambda s: pd.concat([s, s.iloc[:1]]), "extra_ids", "more than the 10 rows"),
        (lambda s: s.assign(video=s["video"].where(s.index != 5, "v99")), "key_mismatch", "v99"),
        (lambda s: s.assign(user=s["user"].where(s.index != 5, "u7")), "extra_ids", "not expected"),
    ],
)
def test_a_ranked_file_that_lacks_adds_or_changes_a_row_is_refused(tmp_path, change, reason, words):
    answers = _answers()[["user", "video", "watched"]]
    scorer = Scorer(_ranked_spec(), answers=answers)
    with pytest.raises(SubmissionError) as err:
        scorer.score(_write(tmp_path / "bad.csv", change(answers[["user", "video"]])))
    assert err.value.reason == reason and words in str(err.value), str(err.value)


def test_the_mean_of_gauc_and_ndcg_at_5_is_the_mean_of_the_two(tmp_path):
    answers = _answers()
    scorer = Scorer(_spec(metric="mean(gauc, ndcg@5)"), answers=answers)
    scores = np.array([0.9, 0.1, 0.2, 0.3, 0.2, 0.8, 0.1, 0.7, 0.6, 0.65])
    value = scorer.score(_write(tmp_path / "a.csv", answers[["id", "user", "video"]].assign(score=scores))).value
    truth, groups = answers["watched"].astype(int).to_numpy(), answers["user"].to_numpy()
    gauc = get_metric("gauc")(truth, scores, groups=groups)
    ndcg = get_metric("ndcg_at_k")(truth.astype(float), scores, groups=groups, k=5)
    assert gauc != pytest.approx(ndcg) and value == pytest.approx((gauc + ndcg) / 2)
    weighted = get_metric("mean(3*gauc, 1*ndcg@5)")(truth.astype(float), scores, groups=groups)
    assert weighted == pytest.approx(0.75 * gauc + 0.25 * ndcg)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("mean(gauc, rmse)", "do not share a direction"),
        ("mean(gauc)", "a mean needs two or more"),
        ("mean(gauc, accuracy)", "different predictions"),
        ("mean(gauc, roc_auc@5)", "take(s) no cut-off"),
        ("mean(gauk, ndcg@5)", "did you mean 'gauc'"),
        ("mean(0*gauc, ndcg@5)", "a weight must be above 0"),
    ],
)
def test_a_mean_of_metrics_that_cannot_be_is_one_clear_line(name, words):
    with pytest.raises(ConfigError) as err:
        metric_name(name)
    assert words in str(err.value.args[0]) and "\n" not in str(err.value.args[0])
