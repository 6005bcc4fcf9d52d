"""MLE-bench grading: medal thresholds for every size class of the table, ties at a
threshold, the strict median, the direction read off the leaderboard, and a known submission
graded to its known score through `mlguild grade` and `mlguild init mlebench:`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import as_competition_folder, mlguild, one_line
from sklearn.metrics import roc_auc_score

from mlguild.bench.grading import grade_submission
from mlguild.bench.medals import Leaderboard, medal_positions, medal_report
from mlguild.task.folder import load_task


@pytest.mark.parametrize(
    ("teams", "positions"),
    [
        (1, (1, 1, 1)),
        (7, (1, 1, 2)),  # floor(0.7) is 0: position 1 at least
        (50, (5, 10, 20)),
        (99, (9, 19, 39)),
        (100, (10, 20, 40)),
        (249, (10, 49, 99)),
        (250, (10, 50, 100)),
        (999, (11, 50, 100)),
        (1000, (12, 50, 100)),
        (4321, (18, 216, 432)),
    ],
)
def test_medal_positions_follow_the_table_for_each_size_class(teams, positions):
    assert medal_positions(teams) == positions


def _board(n: int, lower: bool) -> Leaderboard:
    scores = [round(0.99 - 0.001 * i, 3) for i in range(n)]  # best first, higher is better
    return Leaderboard.of([round(1 - s, 3) for s in scores] if lower else scores)


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("teams", [40, 120, 300, 1500])
def test_a_tie_with_a_threshold_wins_that_medal_and_a_hair_worse_does_not(teams, lower):
    board = _board(teams, lower)
    assert board.lower_is_better is lower  # read off the board: its first score below its last
    gold_at, silver_at, bronze_at = medal_positions(teams)
    worse = 1e-6 if lower else -1e-6
    for position, medal in ((gold_at, "gold"), (silver_at, "silver"), (bronze_at, "bronze")):
        tie = medal_report(board.at(position), board)
        assert tie.medal == medal and tie.any_medal
        if position < bronze_at:
            assert medal_report(board.at(position) + worse, board).medal != medal
    last = medal_report(board.at(bronze_at) + worse, board)
    assert not last.any_medal and last.medal == ""
    at_median = medal_report(board.median(), board)
    assert not at_median.above_median  # strictly better than the median only
    assert medal_report(board.median() - worse, board).above_median
    nothing = medal_report(None, board)
    assert not (nothing.any_medal or nothing.above_median)


def test_a_flat_leaderboard_takes_the_metrics_direction():
    assert Leaderboard.of([0.5, 0.5], "minimize").lower_is_better
    assert not Leaderboard.of([0.5, 0.5], "maximize").lower_is_better


def test_grading_a_known_submission_reproduces_its_score(example_tasks, tmp_path):
    task = load_task(example_tasks["churn"])
    answers = pd.read_csv(task.answers_path, dtype=str)
    rng = np.random.default_rng(3)
    prob = rng.uniform(size=len(answers))
    truth = (answers["churn"] == task.spec.positive_label).astype(int)
    prob = np.clip(prob * 0.5 + truth * 0.3, 0, 1)
    submission = tmp_path / "sub.csv"
    pd.DataFrame({"id": answers["id"], "churn": prob}).to_csv(submission, index=False)
    expected = round(roc_auc_score(truth, prob), 5)

    report = grade_submission(task, submission)
    assert (report["score"], report["valid_submission"], report["error"]) == (expected, True, "")
    assert "any_medal" not in report  # no leaderboard, no medals

    short = tmp_path / "short.csv"
    pd.read_csv(submission).iloc[:-3].to_csv(short, index=False)
    bad = grade_submission(task, short)
    assert (bad["score"], bad["valid_submission"]) == (None, False) and bad["error"]

    board = tmp_path / "leaderboard.csv"
    scores = [expected + 0.02, expected + 0.01, expected, expected - 0.1, expected - 0.2]
    pd.DataFrame({"teamName": ["a", "b", "c", "d", "e"], "score": scores}).to_csv(board)
    medals = grade_submission(task, submission, board)
    # 5 teams: gold and silver at position 1, bronze at 2; above the median (the 3rd score)? a tie: no
    assert (medals["medal"], medals["above_median"], medals["n_teams"]) == ("", False, 5)
    assert medals["win_rate"] == pytest.approx(2 / 5)  # beats the last two; the tie with the third counts not


@pytest.mark.parametrize("lower", [False, True])
def test_the_win_rate_is_the_share_of_teams_strictly_beaten(lower):
    sign = -1 if lower else 1
    board = Leaderboard.of([sign * s for s in (0.9, 0.8, 0.8, 0.7)])  # best first, a tie at 0.8
    assert board.win_rate(sign * 0.95) == 1.0  # better than every team
    assert board.win_rate(sign * 0.8) == pytest.approx(1 / 4)  # ties beat no one
    assert board.win_rate(sign * 0.75) == pytest.approx(1 / 4)
    assert board.win_rate(sign * 0.1) == 0.0
    assert board.win_rate(None) == 0.0  # no valid submission
    assert medal_report(sign * 0.85, board).win_rate == pytest.approx(3 / 4)


def test_init_mlebench_and_grade_from_the_command_line(example_tasks, tmp_path):
    data = tmp_path / "mle-data"
    as_competition_folder(example_tasks["titanic"], data / "titanic", "mle")
    refused = mlguild("init", "mlebench:titanic", cwd=tmp_path)
    assert refused.returncode == 2 and "--data-dir" in one_line(refused.stderr)
    done = mlguild("init", "mlebench:titanic", "--data-dir", str(data), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    prepared = data / "titanic" / "prepared"
    assert (prepared / "task.yaml").exists() and "metric accuracy" in one_line(done.stdout)

    answers = pd.read_csv(prepared / "private" / "answers.csv", dtype=str)
    perfect = tmp_path / "perfect.csv"
    answers.to_csv(perfect, index=False)
    pd.DataFrame({"score": [1.0, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]}).to_csv(
        data / "titanic" / "leaderboard.csv", index=False
    )
    graded = mlguild("grade", str(perfect), "--task", str(data / "titanic"), "--json", cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr
    report = json.loads(graded.stdout)
    assert (report["score"], report["medal"], report["above_median"]) == (1.0, "gold", True)
    assert report["win_rate"] == pytest.approx(0.9)  # the perfect score ties the best team, beats the other nine

    run = mlguild("run", str(prepared), "--dry-run", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    of_run = mlguild("grade", str(run_dir), cwd=tmp_path)
    assert of_run.returncode == 0, of_run.stderr
    assert "titanic: accuracy" in of_run.stdout and "above median" in of_run.stdout and "win rate" in of_run.stdout


def test_grading_a_folder_without_task_yaml_writes_nothing(example_tasks, tmp_path):
    folder = as_competition_folder(example_tasks["ames"], tmp_path / "ames", "mle")
    answers = folder / "prepared" / "private" / "answers.csv"
    graded = mlguild("grade", str(answers), "--task", str(folder), "--json", cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["score"] == 0.0  # the answers themselves: no error at all
    assert not (folder / "prepared" / "task.yaml").exists()
