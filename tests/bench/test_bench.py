"""`mlguild bench`: a suite of tasks run and graded once each, with medals where a
leaderboard exists, baselines through the same grading, the aggregate over seeds, and a
stopped bench that resumes without running a finished task again."""

from __future__ import annotations

import json

import pandas as pd
from conftest import as_competition_folder, mlguild

from mlguild.bench.suite import mean_se, read_suite, table


def test_the_aggregate_is_the_mean_and_standard_error_over_seeds():
    rows = [
        {"task": t, "agent": "mlguild", "seed": seed, "score": 0.5, "valid_submission": True,
         "any_medal": medal, "above_median": True, "medal": "bronze" if medal else "",
         "win_rate": 0.9 if medal else 0.6}
        for seed, medals in enumerate([(True, False), (True, True)])
        for t, medal in zip(("a", "b"), medals, strict=True)
    ]  # fmt: skip
    text = table(rows)
    assert "any medal 75.0% ± 25.0" in text and "above median 100.0% ± 0.0" in text
    assert "win rate 82.5% ± 7.5" in text and "| 60.0% |" in text  # seeds' means 75% and 90%; a row's own
    assert mean_se([1.0, 3.0]) == (2.0, 1.0) and mean_se([4.0]) == (4.0, 0.0)


def test_a_suite_file_is_read_with_comments(tmp_path):
    suite = tmp_path / "suite.txt"
    suite.write_text("# lite\nexample:churn\n\n  mlebench:titanic  # a comment\n")
    assert read_suite(str(suite)) == ["example:churn", "mlebench:titanic"]
    assert read_suite("example:a, example:b") == ["example:a", "example:b"]


def test_bench_runs_grades_and_resumes(example_tasks, tmp_path):
    data = tmp_path / "mle"
    as_competition_folder(example_tasks["titanic"], data / "titanic", "mle")
    boards = tmp_path / "competitions"
    (boards / "titanic").mkdir(parents=True)
    pd.DataFrame({"score": [0.99, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.1]}).to_csv(
        boards / "titanic" / "leaderboard.csv", index=False
    )
    suite = tmp_path / "suite.txt"
    suite.write_text("mlebench:titanic\nexample:ames\n")
    args = ["bench", str(suite), "--time", "60s", "--seeds", "2", "--out", "out", "--data-dir", str(data)]
    args += ["--leaderboards", str(boards), "--brain", "scripted", "--set", "budget.iterations=2"]
    first = mlguild(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    agent = [r for r in rows if r["agent"] == "mlguild"]
    assert len(agent) == 4 and all(r["valid_submission"] for r in agent)
    titanic = [r for r in agent if r["task"] == "titanic"]
    assert all("any_medal" in r and r["n_teams"] == 10 for r in titanic)  # medals where a leaderboard is
    assert all("any_medal" not in r for r in agent if r["task"] == "ames")
    baseline = [r for r in rows if r["agent"] == "sample submission"]
    assert {r["task"] for r in baseline} == {"titanic", "ames"} and all(r["valid_submission"] for r in baseline)
    text = (tmp_path / "out" / "table.md").read_text()
    assert "| titanic | mlguild | 1 | accuracy |" in text and "over 2 seed(s), 2 task(s)" in text
    assert "any medal" in text and "titanic: score" in text

    logs = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "logs").iterdir()}
    again = mlguild(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "logs").iterdir()} == logs  # nothing re-run
    assert [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()] == rows
