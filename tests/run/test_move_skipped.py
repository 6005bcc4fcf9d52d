"""A move the task does not allow is skipped with its reason, and the search goes on.

A brain raises ``MoveUnavailable`` for a move it cannot make for this task (the recipes'
blend when rows cannot be aligned, a recipe for a shape they do not cover): the reserved
node is taken out, ``move_skipped`` is journaled once, the op is never chosen again (also
after a resume), and the run still spends its whole budget and reaches the final stage.
"""

from __future__ import annotations

import pytest
from conftest import make_task

from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.errors import MoveUnavailable, TaskError
from mlguild.core.graph import Node, SearchGraph
from mlguild.core.protocols import Action, Context, Proposal
from mlguild.core.vocabulary import Op
from mlguild.final.stage import finish
from mlguild.run.loop import Agent, instead_of
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

# A logistic curve on x0 whose slope differs per node; it writes out-of-fold predictions
# for the training rows too, so the policies see blendable members.
SLOPED = """
import math, os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
for src, dst in (("train.csv", "oof.csv"), ("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    p = 1 / (1 + (-SLOPE * frame["x0"]).map(math.exp))
    pd.DataFrame({"id": frame["id"], "y": p}).to_csv("output/" + dst, index=False)
"""


class NoBlendBrain(ScriptedBrain):
    """Writes a new curve for every node, and cannot blend (as for a task whose rows repeat)."""

    def propose(self, action: Action, context: Context) -> Proposal:
        self.calls.append(action)
        if action.op == Op.BLEND:
            raise MoveUnavailable(
                "a blend aligns predictions by id, and this task's ids repeat", "set search.fuse_every=0"
            )
        slope = 1 + context.iteration
        code = f"SLOPE = {slope}\n{SLOPED}"
        return Proposal(f"{action.op}: slope {slope}", code, {"recipe": "curve"}, title=f"Curve, slope {slope}")


def _agent(tmp_path, iterations: int) -> Agent:
    sets = [
        f"budget.iterations={iterations}",
        "search.num_drafts=2",
        "search.draft_every=0",
        "search.fuse_every=1",
        "sandbox.script_timeout_s=30",
        "final.grade_test=true",
    ]
    cfg = load_config(None, sets)
    run = create_run(load_task(make_task(tmp_path / "t")), cfg, tmp_path / "runs")
    return Agent(open_session(run, NoBlendBrain(), get_sandbox("local")))


def test_an_unavailable_blend_is_skipped_once_and_the_run_spends_its_whole_budget(tmp_path):
    agent = _agent(tmp_path, iterations=5)
    stop = agent.run_loop()
    result = finish(agent.session, stop)
    records = read_journal(agent.session.run.path / "journal.jsonl")

    skipped = [r for r in records if r["type"] == "move_skipped"]
    assert [(r["op"], r["reason"], r["fix"]) for r in skipped] == [
        ("blend", "a blend aligns predictions by id, and this task's ids repeat", "set search.fuse_every=0")
    ]
    assert len(skipped[0]["parents"]) == 2  # the blend the policy chose, named in the record
    graph = agent.session.state.graph
    searched = [n for n in graph if n.op != Op.REFIT]
    assert len(searched) == 5 and not any(n.is_blend for n in graph)  # five real nodes, no hole
    assert [n.id for n in graph] == [f"n{i:04d}" for i in range(1, len(graph) + 1)]
    assert sum(a.op == Op.BLEND for a in agent.session.brain.calls) == 1  # never asked again
    assert stop.finished and result.choice is not None and result.grade is not None
    # the blend's place went to an improvement of its best member
    after = searched[2]
    assert after.op == Op.IMPROVE and after.parents == (skipped[0]["parents"][0],)
    # a resume knows the move is unavailable without asking the brain again
    state = replay(records, "maximize")
    assert state.unavailable == {"blend": skipped[0]["reason"]}


def test_the_move_in_place_of_an_unavailable_one():
    graph = SearchGraph("maximize")
    graph.add(Node(id="n0001", op=Op.DRAFT, parents=(), iteration=0, status="ok", score=0.8))
    graph.add(Node(id="n0002", op=Op.DRAFT, parents=(), iteration=1, status="ok", score=0.7))
    blend = Action(Op.BLEND, ("n0001", "n0002"), "blend")
    why = {"blend": "rows repeat"}
    assert instead_of(blend, graph, {}) is blend
    improve = instead_of(blend, graph, why)
    assert (improve.op, improve.parents) == (Op.IMPROVE, ("n0001",)) and "rows repeat" in improve.reason
    assert instead_of(blend, graph, {**why, "improve": "no"}).op == Op.DRAFT
    with pytest.raises(TaskError, match="no move for this task") as err:
        instead_of(Action(Op.DRAFT, (), "draft"), graph, {"draft": "no recipe for rankings"})
    assert "no recipe for rankings" in str(err.value) and "--brain llm" in err.value.fix
