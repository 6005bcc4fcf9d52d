"""Small data judged on more than a handful of rows: on a small holdout the search ranks
nodes by the pooled score (holdout and out-of-fold, weighted by their rows), leaky_cv nodes
by their holdout alone, and the pooled score is named as such wherever it is shown."""

from __future__ import annotations

import json

from conftest import mlguild

from mlguild.brains.llm.brain import _tried_line
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.protocols import Action, Proposal
from mlguild.core.score import POOLED_LABEL, format_score
from mlguild.core.vocabulary import Op
from mlguild.final.stage import finish
from mlguild.memory.experience import TaskTraits, experience_of
from mlguild.run.context import leaders, outcome_line, why_chosen
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.sandbox import get_sandbox
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task
from mlguild.view.report import write_report
from mlguild.view.runs import load_run, run_detail
from mlguild.view.terminal import Snapshot, lines

# Titanic's gender rule (women survive) for the holdout inputs and the test rows; ``flip``
# turns a seeded share of its holdout predictions over (a node that got unlucky there), and
# the out-of-fold file is the rule itself, a constant "died", or the training labels (a leak).
SCRIPT = """
import os
from pathlib import Path
import numpy as np
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
rule = lambda frame: (frame["gender"] == "female").astype(int)
holdout = pd.read_csv(data / "holdout.csv", dtype={{"id": str}})
guess = rule(holdout).to_numpy()
turn = np.random.default_rng(7).random(len(guess)) < {flip}
guess[turn] = 1 - guess[turn]
pd.DataFrame({{"id": holdout["id"], "survived": guess}}).to_csv("output/holdout.csv", index=False)
test = pd.read_csv(data / "test.csv", dtype={{"id": str}})
pd.DataFrame({{"id": test["id"], "survived": rule(test)}}).to_csv("output/submission.csv", index=False)
train = pd.read_csv(data / "train.csv", dtype={{"id": str}})
oof = {{"rule": rule(train), "died": 0 * rule(train), "labels": train["survived"]}}["{oof}"]
pd.DataFrame({{"id": train["id"], "survived": oof}}).to_csv("output/oof.csv", index=False)
"""


def test_on_a_small_holdout_the_choice_follows_the_pooled_score(tmp_path):
    sets = [
        "budget.iterations=3",
        "search.num_drafts=3",
        "search.draft_every=0",
        "search.fuse_every=0",
        "search.evidence_reruns=0",
        "search.small_holdout_rows=1000",  # titanic's holdout (about 350 rows) counts as small
        "final.refit=false",
        "sandbox.script_timeout_s=60",
    ]
    cfg = load_config(None, sets)
    run = create_run(load_task(build_example("titanic", tmp_path / "titanic")), cfg, tmp_path / "runs")
    scripts = [
        Proposal("lucky on the holdout", SCRIPT.format(flip=0.0, oof="died"), {}),  # n0001
        Proposal("unlucky on the holdout", SCRIPT.format(flip=0.1, oof="rule"), {}),  # n0002
        Proposal("leaky validation", SCRIPT.format(flip=0.1, oof="labels"), {}),  # n0003
    ]
    agent = Agent(open_session(run, ScriptedBrain(scripts), get_sandbox("local")))
    stop = agent.run_loop()
    graph = agent.session.state.graph
    lucky, unlucky, leaky = graph["n0001"], graph["n0002"], graph["n0003"]
    holdout_rows = run.workspace.manifest()["split"]["holdout_rows"]
    train_rows = run.workspace.manifest()["split"]["train_rows"]

    # The holdout alone prefers the lucky node; its out-of-fold rows say otherwise.
    assert lucky.holdout_score is not None and unlucky.holdout_score is not None
    assert lucky.holdout_score > unlucky.holdout_score and unlucky.oof_score > lucky.oof_score
    for node in (lucky, unlucky):
        pooled = (node.holdout_score * holdout_rows + node.oof_score * train_rows) / (holdout_rows + train_rows)
        assert abs(node.score - pooled) < 1e-9 and node.pooled_spread is not None and node.pooled_spread > 0
    # A leaky validation is flagged and ranked by its holdout alone (no pooled score).
    assert "leaky_cv" in leaky.flags and leaky.holdout_score is None
    assert leaky.score == unlucky.holdout_score < unlucky.score  # the same holdout predictions
    # The search, and then the final choice, follow the pooled score.
    assert agent.session.state.best_id == unlucky.id
    done = finish(agent.session, stop)
    assert done.choice is not None and done.choice["base"] == unlucky.id

    # Labelled as pooled wherever it is shown: the journal, score.json, the report, status.
    finished = {r["id"]: r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "node_finished"}
    assert finished[unlucky.id]["score_kind"] == "pooled" and "score_kind" not in finished[leaky.id]
    score = json.loads((run.node_dir(unlucky.id) / "score.json").read_text())
    assert score["holdout_score"] == unlucky.holdout_score and score["pooled_score"] == unlucky.score
    assert "- pooled accuracy:" in (run.node_dir(unlucky.id) / "report.md").read_text()
    best = json.loads((run.path / "best" / "best.json").read_text())
    assert best["pooled_score"] == unlucky.score and best["holdout_score"] == unlucky.holdout_score
    status = mlguild("status", str(run.path), cwd=tmp_path).stdout
    assert "p: the pooled score" in status
    _pooled_is_named_in_prompts_and_views(agent, run, unlucky, leaky)


def _pooled_is_named_in_prompts_and_views(agent, run, pooled, holdout_only) -> None:
    """Every line that shows a node's score to an LLM or a person names a pooled one as such,
    and leaves a holdout score (a leaky_cv node's) unnamed."""
    graph = agent.session.state.graph
    mark = f"({POOLED_LABEL})"
    # Prompts: what was tried under a parent, the leaders, a branch's trajectory (outcome_line);
    # the draft prompt's history (_tried_line); why a parent was chosen; the memory's records.
    assert f"{pooled.score:.6g} {mark}" in outcome_line(pooled) and "pooled" not in outcome_line(holdout_only)
    assert any(line.startswith(pooled.id) and mark in line for line in leaders(graph))
    context = agent.session.contexts.build(graph, Action(Op.DRAFT), 4, 60.0)
    tried = {item.node_id: _tried_line(item) for item in context.history}
    assert tried[pooled.id].endswith(f"-> {pooled.score:.5g} {mark}") and "pooled" not in tried[holdout_only.id]
    assert f"(the best is {pooled.id}, {pooled.score:.6g} {POOLED_LABEL})" in why_chosen(
        graph, Action(Op.IMPROVE, (holdout_only.id,))
    )
    traits = TaskTraits("binary", "accuracy", 1000, 10, "tabular", 0.0, 10)
    line = experience_of(pooled, graph, "r", "titanic", traits, 0.01).line()
    assert f"scored {pooled.score:.5g} {mark}" in line
    assert "pooled" not in experience_of(holdout_only, graph, "r", "titanic", traits, 0.01).line()
    # Views: the node's report against a pooled parent, the run report (its tables and ladder),
    # the dashboard's data, the live board.
    write_report(run.path)
    md = (run.path / "report.md").read_text()
    assert f"| {pooled.id} | draft | — | {format_score(pooled.score)} (pooled) |" in md
    assert f"ranked by pooled {pooled.score:.5g}" in md  # the ladder shows the holdout part beside it
    view = load_run(run.path)
    nodes = {n["id"]: n for n in run_detail(view)["nodes"]}
    assert nodes[pooled.id]["holdout_score"] == pooled.holdout_score and nodes[holdout_only.id]["holdout_score"] is None
    assert run_detail(view)["best"]["pooled"] is True
    snap = Snapshot("accuracy", "maximize", best=(pooled.id, pooled.score, pooled.title), best_pooled=True)
    assert lines(snap)[0].startswith(f"best accuracy pooled {format_score(pooled.score)} ({pooled.id}")
