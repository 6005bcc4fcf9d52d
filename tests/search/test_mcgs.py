"""Monte Carlo graph search on synthetic graphs: rewards, widening, exploration early and
the top-K late, the per-branch cap, terminal nodes, and a resume that chooses exactly as the
uninterrupted run would have."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kill_after_finished

from mlguild.config import BudgetConfig, MCGSConfig, SearchConfig, load_config
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay
from mlguild.search import MCGSPolicy, Node, SearchGraph, get_policy
from mlguild.search.tree_stats import ROOT


def _policy(iterations: int | None = None, time_s: float | None = None, **mcgs) -> MCGSPolicy:
    cfg = SearchConfig(
        policy="mcgs", num_drafts=3, draft_every=0, fuse_every=0, debug_probability=1.0, mcgs=MCGSConfig(**mcgs)
    )
    return MCGSPolicy(cfg, BudgetConfig(iterations=iterations, time_s=time_s))


def _add(graph: SearchGraph, op: str, parents=(), score: float | None = None, exec_s: float = 1.0) -> Node:
    node = Node(
        id=graph.next_id(),
        op=op,
        parents=tuple(parents),
        iteration=len(graph),
        status="scored" if score is not None else "crash",
        score=score,
        timing={"exec_s": exec_s, "brain_s": 0.0, "harness_s": 0.0},
    )
    return graph.add(node)


def _simulate(policy: MCGSPolicy, steps: int, seed: int = 0, graph: SearchGraph | None = None, fail=0.1):
    """Grow a graph with ``policy``: each draft starts a branch of a random quality, each
    improve moves its parent's score by a little noise, a share of nodes fail."""
    rng = random.Random(seed)
    graph = graph or SearchGraph("maximize")
    actions = []
    for _ in range(steps):
        action = policy.select(graph, len(graph))
        actions.append((action, len(graph)))
        failed = rng.random() < fail
        if action.op in ("draft", "debug"):
            score = rng.uniform(0.5, 0.8)
        else:  # improve, evolve, fuse: near the (best) parent
            score = max(graph[p].score for p in action.parents) + rng.gauss(0.002, 0.01)
        _add(graph, action.op, action.parents, None if failed else score)
    return graph, actions


def test_rewards_are_backed_up_through_every_ancestor():
    policy = _policy()
    graph = SearchGraph("maximize")
    d1 = _add(graph, "draft", score=0.5)
    bad = _add(graph, "improve", [d1.id])  # a failure: -1
    fixed = _add(graph, "debug", [bad.id], score=0.4)  # valid + repaired, not a new best
    better = _add(graph, "improve", [d1.id], score=0.6)  # valid + new best
    policy.stats.update(graph)
    s = policy.stats
    assert s.reward[d1.id] == 2000 - 1000 + 1500 + 2000 and s.visits[d1.id] == 4
    assert s.reward[bad.id] == -1000 + 1500 and s.visits[bad.id] == 2
    assert s.reward[fixed.id] == 1500 and s.reward[better.id] == 2000
    assert s.visits[ROOT] == 4 and s.children[ROOT] == [d1.id] and s.children[d1.id] == [bad.id, better.id]
    assert s.failed_leaves == set()  # the failure was repaired, so it is no leaf
    fuse = _add(graph, "fuse", [better.id, fixed.id], score=0.7)
    policy.stats.update(graph)
    assert s.visits[ROOT] == 5 and s.visits[d1.id] == 5  # a fuse counts once for each lineage it drew on
    assert s.children[ROOT] == [d1.id, fuse.id]


def test_drafts_then_debug_then_uct():
    policy = _policy(iterations=50)
    graph = SearchGraph("maximize")
    assert policy.select(graph, 0).op == "draft"
    d1 = _add(graph, "draft", score=0.7)
    broken = _add(graph, "draft")
    d3 = _add(graph, "draft", score=0.6)
    action = policy.select(graph, 3)
    assert (action.op, action.parents) == ("debug", (broken.id,))
    policy.cfg.max_debug_depth = 0
    action = policy.select(graph, 3)
    # d1 set a new best and d3 did not, so d1's subtree has the higher mean reward; tried
    # once, it may have one child.
    assert (action.op, action.parents) == ("improve", (d1.id,))
    child = _add(graph, "improve", [d1.id], score=0.71)
    # Tried twice, d1 may still have only one child: the descent goes on into it, or to d3.
    assert policy.select(graph, 5).parents in ((child.id,), (d3.id,))
    assert policy.stats.children[d1.id] == [child.id]


def test_widening_lets_a_node_have_more_children_as_it_is_tried():
    policy = _policy(widen_base=1.0, widen_power=0.5)
    assert [policy.widening(n) for n in (1, 2, 3, 4, 8, 9, 16)] == [1, 1, 1, 2, 2, 3, 4]


def test_exploration_early_top_k_late_and_the_branch_cap():
    policy = _policy(iterations=120, exploit_start=0.6, exploit_full=0.9, top_k=4, branch_cap=2)
    graph, actions = _simulate(policy, 120, seed=3)
    early = [a for a, i in actions if a.op == "improve" and 3 <= i < 40]
    early_branches = {graph[a.parents[0]].branch for a in early}
    assert {n.id for n in graph.drafts()[:3]} <= early_branches  # every draft's branch is explored
    late = [(a, i) for a, i in actions if a.op == "improve" and i >= 108]  # progress >= 0.9
    assert late and all(a.reason.startswith("exploit") for a, _ in late)
    # Replaying the growth, each late target was one of the top-K of the graph at that time.
    replay = SearchGraph("maximize")
    fresh = _policy(iterations=120, exploit_start=0.6, exploit_full=0.9, top_k=4, branch_cap=2)
    nodes = list(graph)
    for action, index in actions:
        for node in nodes[len(replay) : index]:
            replay.add(Node(**{**node.to_dict(), "parents": tuple(node.parents)}))
        if (action, index) in late:
            fresh.stats.update(replay)
            top = fresh.top_k(replay)
            assert action.parents[0] in {n.id for n in top}
            branches = [n.branch for n in top]
            assert all(branches.count(b) <= 2 for b in branches) and len(top) == 4


def test_top_k_holds_the_branch_cap_when_one_branch_has_every_best_node():
    policy = _policy(top_k=4, branch_cap=2)
    graph = SearchGraph("maximize")
    strong = _add(graph, "draft", score=0.90)
    for score in (0.91, 0.92, 0.93, 0.94, 0.95):
        _add(graph, "improve", [strong.id], score=score)
    weak = [_add(graph, "draft", score=s) for s in (0.5, 0.6)]
    policy.stats.update(graph)
    top = policy.top_k(graph)
    assert [n.score for n in top] == [0.95, 0.94, 0.6, 0.5]
    assert {n.id for n in top[2:]} == {w.id for w in weak}


def test_a_node_of_negligible_gains_is_terminal_and_its_children_are_improved_instead():
    policy = _policy(terminal_after=3, negligible_gain=0.001, widen_base=10.0)
    graph = SearchGraph("maximize")
    d1 = _add(graph, "draft", score=0.8)
    kids = [_add(graph, "improve", [d1.id], score=s) for s in (0.8001, 0.79)]
    _add(graph, "improve", [d1.id])  # a failure counts as no gain
    policy.stats.update(graph)
    assert policy.terminal(graph, d1)
    assert not policy.terminal(graph, kids[0])
    policy.cfg.num_drafts, policy.cfg.max_debug_depth = 1, 0
    action = policy.select(graph, len(graph))
    assert action.op == "improve" and action.parents[0] in {k.id for k in kids}
    # A real gain among the last three children keeps it open.
    _add(graph, "improve", [d1.id], score=0.85)
    policy.stats.update(graph)
    assert not policy.terminal(graph, d1)


def test_everything_terminal_or_broken_means_a_fresh_draft():
    policy = _policy(terminal_after=1)
    graph = SearchGraph("maximize")
    policy.cfg.num_drafts, policy.cfg.max_debug_depth = 1, 0
    d1 = _add(graph, "draft", score=0.8)
    _add(graph, "improve", [d1.id])
    assert policy.select(graph, 2).op == "draft"


def test_exploration_decays_and_progress_reads_journaled_times():
    policy = _policy(time_s=100.0, exploration_start=2.0, exploration_end=0.5)
    assert policy.exploration(0.0) == 2.0 and policy.exploration(1.0) == 0.5
    graph = SearchGraph("maximize")
    for _ in range(5):
        _add(graph, "draft", score=0.5, exec_s=10.0)
    policy.stats.update(graph)
    assert policy.progress(graph) == pytest.approx(0.5)
    assert policy.exploit_share(0.5) == 0.0 and policy.exploit_share(0.75) == pytest.approx(0.5)
    assert policy.exploit_share(0.95) == 1.0
    iters = _policy(iterations=10)
    iters.stats.update(graph)
    assert iters.progress(graph) == 0.5


def test_a_fresh_policy_on_the_same_graph_chooses_exactly_as_the_live_one():
    live = _policy(iterations=80)
    graph, actions = _simulate(live, 80, seed=11)
    # Rebuild the graph node by node (as replay does after a kill -9): at every point a new
    # policy, which has seen nothing before, makes the choice the live policy made.
    replay = SearchGraph("maximize")
    nodes = list(graph)
    for action, index in actions:
        for node in nodes[len(replay) : index]:
            replay.add(Node(**{**node.to_dict(), "parents": tuple(node.parents)}))
        assert _policy(iterations=80).select(replay, index) == action
    fresh = _policy(iterations=80)
    fresh.stats.update(graph)
    live.stats.update(graph)  # it chose the last node, and has not seen it finish yet
    assert (fresh.stats.visits, fresh.stats.reward, fresh.stats.ranked) == (
        live.stats.visits,
        live.stats.reward,
        live.stats.ranked,
    )


def test_mcgs_is_chosen_by_config():
    cfg = load_config(None, ["search.policy=mcgs", "search.mcgs.top_k=7"])
    policy = get_policy(cfg.search, cfg.budget)
    assert isinstance(policy, MCGSPolicy) and policy.mc.top_k == 7
    with pytest.raises(Exception, match="exploit_full"):
        load_config(None, ["search.mcgs.exploit_start=0.9", "search.mcgs.exploit_full=0.5"])


RUNNER = r"""
import sys
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.brains.scripted import ScriptedBrain
from mlguild.rundir.folder import create_run, open_run
from mlguild.config import load_config
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task
mode, path = sys.argv[1], sys.argv[2]
if mode == "new":
    cfg = load_config(None, ["budget.iterations=10", "search.policy=mcgs", "search.num_drafts=2",
                             "search.draft_every=0", "search.mcgs.exploit_start=0.5", "sandbox.script_timeout_s=30"])
    run = create_run(load_task(sys.argv[3]), cfg, path, run_id="r")
else:
    run = open_run(path)
Agent(open_session(run, ScriptedBrain(), get_sandbox("local"))).run_loop()
"""


def _choices(run_dir: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    state = replay(read_journal(run_dir / "journal.jsonl"), "maximize")
    return [(n.id, n.op, n.parents) for n in state.graph]


def test_a_resume_after_kill_9_makes_the_choices_the_uninterrupted_run_made(small_task, tmp_path):
    whole = tmp_path / "whole"
    subprocess.run([sys.executable, "-c", RUNNER, "new", str(whole), str(small_task)], check=True, timeout=120)
    reference = _choices(whole / "r")
    assert len(reference) == 10 and {op for _, op, _ in reference} >= {"draft", "improve"}

    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, "new", str(killed), str(small_task)])
    kill_after_finished(proc, killed / "r" / "journal.jsonl", 6)
    subprocess.run([sys.executable, "-c", RUNNER, "resume", str(killed / "r")], check=True, timeout=120)
    assert _choices(killed / "r") == reference


def test_a_stagnant_branch_is_evolved_or_fused_with_the_best_of_other_branches():
    policy = _policy(stagnation_after=4, fuse_share=0.5, fuse_parents=3, widen_base=10.0, terminal_after=0)
    policy.cfg.max_debug_depth = 0
    graph = SearchGraph("maximize")
    a = _add(graph, "draft", score=0.80)
    b = _add(graph, "draft", score=0.70)
    c = _add(graph, "draft", score=0.60)
    best_b = _add(graph, "improve", [b.id], score=0.72)
    for parent in (b, b, c, c, c):  # failures make the other branches less attractive to UCT
        _add(graph, "improve", [parent.id])
    for score in (0.79, 0.78, 0.795, 0.77):  # four nodes of a's branch without a gain
        _add(graph, "improve", [a.id], score=score)
    policy.stats.update(graph)
    assert policy.stats.branch_since[a.branch] == 4 and policy.stats.branch_since[b.branch] == 2
    actions = {}
    for iteration in range(8, 60):
        action = policy.select(graph, iteration)
        if graph[action.parents[0]].branch == a.branch:
            actions.setdefault(action.op, action)
    assert set(actions) == {"evolve", "fuse"}
    assert actions["evolve"].parents == (a.id,)  # the branch's best node
    assert actions["fuse"].parents == (a.id, best_b.id, c.id)  # with the best of two other branches
    # An evolve starts the count afresh: the branch is not shaken again at once.
    _add(graph, "evolve", [a.id], score=0.79)
    policy.stats.update(graph)
    assert policy.stats.branch_since[a.branch] == 0
    assert all(policy.select(graph, i).op not in ("evolve", "fuse") for i in range(10, 30))
