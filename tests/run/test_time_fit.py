"""No node is proposed that the time left cannot run: a move built on a parent whose script
took longer than the time left becomes an improve of a node whose script fits, or the run
ends; the node near the end is told how much time it has."""

from __future__ import annotations

import pytest
from conftest import GOOD, make_task

from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.errors import BudgetExhausted
from mlguild.core.graph import Node, SearchGraph
from mlguild.core.protocols import Action, Proposal
from mlguild.core.vocabulary import Op, Status
from mlguild.run.budget import affordable, best_that_fits
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task


def _graph(*seconds: float) -> SearchGraph:
    graph = SearchGraph("maximize")
    for i, exec_s in enumerate(seconds, start=1):
        node = Node(f"n{i:04d}", Op.DRAFT, (), i, status=Status.SCORED, score=0.8 + i / 100)
        node.timing = {"exec_s": exec_s}
        graph.add(node)
    return graph


def test_with_6_s_left_an_80_s_parent_is_not_improved_a_cheaper_move_is_chosen_or_the_run_ends():
    graph = _graph(80.0, 3.0)
    chosen = affordable(Action(Op.IMPROVE, ("n0001",), "improve the best node n0001"), graph, 6.0, 60.0)
    assert chosen.op == Op.IMPROVE and chosen.parents == ("n0002",)
    assert "only 6 s left" in chosen.reason and "80 s" in chosen.reason
    for op in (Op.IMPROVE, Op.EVOLVE, Op.RERUN, Op.DEBUG):
        with pytest.raises(BudgetExhausted):  # nothing fits: the run ends
            affordable(Action(op, ("n0001",)), _graph(80.0, 40.0), 6.0, 60.0)
    with pytest.raises(BudgetExhausted):
        affordable(Action(Op.FUSE, ("n0001", "n0002")), _graph(80.0, 40.0), 6.0, 60.0)
    assert affordable(Action(Op.IMPROVE, ("n0001",)), graph, 90.0, 90.0).parents == ("n0001",)  # it fits: unchanged
    assert affordable(Action(Op.DRAFT), graph, 6.0, 60.0).op == Op.DRAFT
    # Under the full limit nothing changes: a script that timed out is repaired to be faster.
    assert affordable(Action(Op.DEBUG, ("n0001",)), graph, 60.0, 60.0).parents == ("n0001",)


class _ImproveTheSlowOne:
    """A policy that always asks to improve the first node (what UCT may pick when exploring)."""

    def select(self, graph, iteration):
        return Action(Op.IMPROVE, ("n0001",), "UCT: improve n0001")


def test_the_loop_never_asks_the_brain_to_improve_a_parent_the_time_left_cannot_run(tmp_path):
    sets = ["budget.time_s=1000", "final.refit=false", "sandbox.script_timeout_s=30", "brain.eda=false"]
    cfg = load_config(None, sets)
    run = create_run(load_task(make_task(tmp_path / "t")), cfg, tmp_path / "runs")
    brain = ScriptedBrain([Proposal(f"Plan {i}", GOOD + f"# {i}\n", title=f"draft {i}") for i in range(4)])
    agent = Agent(open_session(run, brain, get_sandbox("local"), policy=_ImproveTheSlowOne()))
    slow, fast = agent.step(Action(Op.DRAFT), 30), agent.step(Action(Op.DRAFT), 30)
    assert slow.ok and fast.ok
    slow.timing["exec_s"], fast.timing["exec_s"] = 80.0, 1.0  # as if its pipeline had taken 80 s
    session = agent.session
    session.state.spent_s = 1000 - 9 - session.clock.elapsed()  # about 9 s left
    node = agent.next_node()
    assert brain.calls[-1].op == Op.IMPROVE and brain.calls[-1].parents == (fast.id,)
    assert node.parents == (fast.id,)
    for each in session.state.graph:  # now no script fits: the run ends, nothing is asked
        each.timing["exec_s"] = 80.0
    asked = len(brain.calls)
    with pytest.raises(BudgetExhausted):
        agent.next_node()
    assert len(brain.calls) == asked


def test_a_move_the_time_left_cannot_make_gives_way_to_the_best_node_that_fits_not_the_fastest():
    # n0001 fastest and worst, n0003 best but too slow, n0002 between: 20 s left.
    graph = _graph(1.0, 12.0, 80.0)
    graph.nodes["n0001"].score = 0.5
    chosen = affordable(Action(Op.IMPROVE, ("n0003",)), graph, 20.0, 60.0)
    assert chosen.parents == ("n0002",) and "the best node whose script fits" in chosen.reason
    # With 14 s left n0002 fits only without the estimate margin, n0001 with it: the margin decides.
    assert affordable(Action(Op.IMPROVE, ("n0003",)), graph, 14.0, 60.0).parents == ("n0001",)
    assert best_that_fits(_graph(13.0), 14.0).id == "n0001"  # fits without the margin: better than nothing


def test_in_the_last_slot_the_cheapest_measured_script_runs_rather_than_nothing():
    graph = _graph(30.0, 1.5)
    # 3 s left for a script: too little for a draft nothing measured, enough for n0002's 1.5 s.
    chosen = affordable(Action(Op.DRAFT), graph, 3.0, 60.0)
    assert chosen.op == Op.IMPROVE and chosen.parents == ("n0002",) and "only 3 s left" in chosen.reason
    assert affordable(Action(Op.BLEND, ("n0001", "n0002")), graph, 3.0, 60.0).op == Op.BLEND  # its limit decides
    with pytest.raises(BudgetExhausted):
        affordable(Action(Op.DRAFT), _graph(30.0, 4.0), 3.0, 60.0)


class _BlendBoth:
    """A policy that always asks for a blend of the first two nodes."""

    def select(self, graph, iteration):
        return Action(Op.BLEND, ("n0001", "n0002"), "blend n0001 and n0002")


def test_a_blend_whose_refit_does_not_fit_gives_way_to_a_node_that_does(tmp_path):
    # A 2-minute churn run ended its search at 1:30 of 2:00: the blend the policy chose would
    # need its members' refits too, and the search stopped instead of running a 2-s script.
    cfg = load_config(None, ["budget.time_s=1000", "sandbox.script_timeout_s=30", "brain.eda=false"])
    run = create_run(load_task(make_task(tmp_path / "t")), cfg, tmp_path / "runs")
    brain = ScriptedBrain([Proposal(f"Plan {i}", GOOD + f"# {i}\n", title=f"draft {i}") for i in range(3)])
    agent = Agent(open_session(run, brain, get_sandbox("local"), policy=_BlendBoth()))
    slow, fast = agent.step(Action(Op.DRAFT), 30), agent.step(Action(Op.DRAFT), 30)
    assert slow.ok and fast.ok
    slow.timing["exec_s"], fast.timing["exec_s"], slow.score = 20.0, 2.0, 0.99
    session = agent.session
    assert session.state.graph.best() is slow
    # Time for the best node's refit and a 2-s script (3 s), not for a blend that refits both.
    needed = session.clock.reserve(session.state.graph).total_s
    session.state.spent_s = 1000 - needed - 3 - session.clock.elapsed()
    action, timeout = agent._choose()
    assert action.op == Op.IMPROVE and action.parents == (fast.id,) and "this blend" in action.reason
    assert fast.timing["exec_s"] <= timeout
