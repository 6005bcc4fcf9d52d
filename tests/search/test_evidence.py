"""Evidence before promotion: a near-tie candidate is re-run with other seeds and promoted
only on its mean; the seed spread is the noise floor; a converged run may stop early, and
only when asked."""

from __future__ import annotations

import pytest
from conftest import GOOD
from conftest import scripted_agent as _agent

from mlguild.config import SearchConfig
from mlguild.core.graph import Evidence
from mlguild.core.protocols import Action
from mlguild.search import GreedyPolicy, MCGSPolicy, Node, SearchGraph
from mlguild.search.evidence import converged, evidence_action

CFG = SearchConfig()
SEEDED = GOOD.replace("import json, os", "import json, os\nprint('seed', os.environ['MLGUILD_SEED'])")


def _graph() -> SearchGraph:
    return SearchGraph("maximize", Evidence(reruns=2, z=1.0, assumed_noise=0.002))


def _add(graph: SearchGraph, op: str, score: float | None, parents=()) -> Node:
    node = Node(graph.next_id(), op, tuple(parents), len(graph), status="scored" if score is not None else "crash")
    node.score = score
    return graph.add(node)


def test_a_gain_inside_the_margin_is_not_promoted_without_re_runs():
    graph = _graph()
    a = _add(graph, "draft", 0.800)
    b = _add(graph, "improve", 0.801, [a.id])  # +0.001, under 0.002 * 0.8 = 0.0016
    assert graph.best() is a and graph.pending_evidence() is b
    action = evidence_action(graph, CFG)
    assert action == Action("rerun", (b.id,), action.reason) and "re-run 1 of 2" in action.reason
    _add(graph, "rerun", 0.8005, [b.id])
    assert graph.best() is a and "re-run 2 of 2" in evidence_action(graph, CFG).reason  # mean 0.80075: still ahead
    _add(graph, "rerun", 0.7980, [b.id])
    assert graph.best() is a and graph.pending_evidence() is None  # its mean 0.7998 is no better
    assert evidence_action(graph, CFG) is None
    scores = [0.801, 0.8005, 0.798]
    mean = sum(scores) / 3
    assert graph.noise_floor() == pytest.approx((sum((x - mean) ** 2 for x in scores) / 2) ** 0.5)


def test_a_candidate_whose_first_re_run_falls_behind_is_dropped_at_once():
    graph = _graph()
    a = _add(graph, "draft", 0.800)
    b = _add(graph, "improve", 0.801, [a.id])
    _add(graph, "rerun", 0.798, [b.id])  # mean 0.7995: behind, so no second re-run is spent
    assert graph.best() is a and evidence_action(graph, CFG) is None


def test_a_candidate_is_promoted_on_its_mean_and_a_clear_gain_needs_no_re_runs():
    graph = _graph()
    a = _add(graph, "draft", 0.800)
    b = _add(graph, "improve", 0.801, [a.id])
    _add(graph, "rerun", 0.8012, [b.id])
    _add(graph, "rerun", 0.8008, [b.id])
    assert graph.best() is b  # mean 0.801 over three seeds beats 0.800
    noise = graph.noise_floor()
    assert noise is not None and noise < 0.001
    c = _add(graph, "improve", 0.801 + 3 * noise, [b.id])  # a gain of three noise floors
    assert graph.best() is c and graph.pending_evidence() is None
    assert next(n.id for n in graph.ranked()) == c.id and all(n.op != "rerun" for n in graph.ranked())


def test_both_policies_ask_for_the_re_runs_first():
    for policy in (
        GreedyPolicy(SearchConfig(num_drafts=1, draft_every=0, fuse_every=0)),
        MCGSPolicy(SearchConfig(policy="mcgs", num_drafts=1, draft_every=0, fuse_every=0)),
    ):
        graph = _graph()
        a = _add(graph, "draft", 0.800)
        b = _add(graph, "improve", 0.8005, [a.id])
        assert policy.select(graph, 2).parents == (b.id,) and policy.select(graph, 2).op == "rerun"
        graph.evidence = None  # no evidence rule: the holdout score alone decides
        assert graph.best() is b and policy.select(graph, 2).op == "improve"


def test_convergence_needs_a_measured_floor_enough_nodes_and_a_window_of_small_gains():
    cfg = SearchConfig(convergence_window=4, convergence_min_scored=6)
    graph = _graph()
    a = _add(graph, "draft", 0.80)
    for score in (0.81, 0.82, 0.8201, 0.8202, 0.8203):
        _add(graph, "improve", score, [a.id])
    assert converged(graph, cfg) is None  # no noise floor measured yet
    _add(graph, "rerun", 0.8190, [graph.best().id])  # a seed spread of 0.0007
    assert converged(graph, cfg) is None  # 0.8201 - 0.82 ... but 0.82 - 0.81 is in the window
    _add(graph, "improve", 0.8203, [a.id])
    why = converged(graph, cfg)
    assert why is not None and "last 4 scored nodes" in why
    _add(graph, "improve", 0.90, [a.id])  # a real gain breaks it
    assert converged(graph, cfg) is None


def test_a_re_run_repeats_the_script_with_another_seed_and_status_shows_the_floor(small_task, tmp_path):
    agent, run = _agent(small_task, tmp_path, [SEEDED, SEEDED], **{"budget.iterations": 10})
    first = agent.step(Action("draft"), 30)
    rerun = agent.step(Action("rerun", (first.id,)), 30)
    again = agent.step(Action("rerun", (first.id,)), 30)
    assert rerun.ok and rerun.meta == {"rerun_of": first.id, "seed": 1} and again.meta["seed"] == 2
    assert (run.node_dir(rerun.id) / "solution.py").read_text() == (run.node_dir(first.id) / "solution.py").read_text()
    assert "seed 1" in (run.node_dir(rerun.id) / "stdout.txt").read_text()
    assert "seed 2" in (run.node_dir(again.id) / "stdout.txt").read_text()
    assert agent.session.state.graph.noise_floor() == 0.0  # this script ignores its seed
    assert agent.session.state.graph.best() is first  # a re-run is never the best itself
    assert agent.session.memory.local.store.count() == 1  # nor a memory record
    from conftest import mlguild

    out = mlguild("status", str(run.path), cwd=tmp_path).stdout
    assert "noise floor (seed spread of roc_auc): 0, from 2 re-runs of 1 nodes" in out


def test_stop_on_convergence_ends_the_run_only_when_asked(small_task, tmp_path):
    sets = {"budget.iterations": 40, "search.convergence_window": 3, "search.convergence_min_scored": 5}
    agent, _run = _agent(small_task, tmp_path / "asked", [GOOD] * 40, **sets, **{"search.stop_on_convergence": True})
    stop = agent.run_loop()
    assert stop.which == "converged" and stop.finished and len(agent.session.state.graph) < 40
    agent, _run = _agent(small_task, tmp_path / "not", [GOOD] * 12, **{**sets, "budget.iterations": 12})
    assert agent.run_loop().which == "iterations"


def test_a_candidate_whose_re_run_fails_is_not_promoted():
    graph = _graph()
    a = _add(graph, "draft", 0.800)
    b = _add(graph, "improve", 0.801, [a.id])
    _add(graph, "rerun", None, [b.id])  # crashed with another seed
    assert graph.best() is a and graph.pending_evidence() is None
    assert evidence_action(graph, CFG) is None


def test_a_near_tie_blend_is_not_re_run_and_a_clear_one_is_promoted():
    graph = _graph()
    a = _add(graph, "draft", 0.800)
    b = _add(graph, "draft", 0.790)
    near = _add(graph, "blend", 0.801, [a.id, b.id])
    assert graph.best() is a and graph.pending_evidence() is None and evidence_action(graph, CFG) is None
    clear = _add(graph, "blend", 0.820, [a.id, b.id])
    assert near.is_blend and graph.best() is clear
