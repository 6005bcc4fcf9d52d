"""Work that cannot finish is not started: a proposal's cost estimated from this run's own
measurements (mlguild.run.cost), the gate before its script starts and the seed checks'
(mlguild.run.gate), and what ``status --json`` says of the time used. Time is driven through
the nodes' recorded timings and the budget's clock, never through how fast this machine is."""

from __future__ import annotations

import pytest
from conftest import make_task, scripted_agent

from mlguild.brains.scripted import PRIOR_SCRIPT
from mlguild.core.errors import BudgetExhausted
from mlguild.core.graph import Evidence, Node, SearchGraph
from mlguild.core.protocols import Action, Proposal
from mlguild.core.vocabulary import FailureKind, Op
from mlguild.metrics import get_metric
from mlguild.run.cost import estimate, family, least_seconds, nothing_fits
from mlguild.run.gate import waive_seed_checks
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import RunState, replay
from mlguild.search.evidence import evidence_action
from mlguild.view.status import time_use

PRIOR = PRIOR_SCRIPT.format(shrink=0.5)
# The prior predictor as a LightGBM script: the import is what names its family to the estimate.
LGBM = "import lightgbm  # noqa: F401\n" + PRIOR


def _recipe_node(node_id: str, recipe: str, exec_s: float, folds: int = 5, seeds: int = 1) -> Node:
    node = Node(id=node_id, op=Op.DRAFT, parents=(), iteration=int(node_id[1:]), status="scored", score=0.8)
    node.meta = {"brain": "recipes", "recipe": recipe, "run": {"n_folds": folds, "seeds": seeds}}
    node.timing, node.code_sha256 = {"exec_s": exec_s, "budget_s": 120.0}, "x"
    return node


def test_a_drafts_cost_is_its_familys_measured_seconds_per_fold_on_this_run():
    graph = SearchGraph("maximize")
    graph.add(_recipe_node("n0001", "lightgbm", exec_s=50.0, folds=5))
    graph.add(_recipe_node("n0002", "catboost", exec_s=5.0))
    draft = Proposal(
        "a lightgbm draft", "", {"brain": "recipes", "recipe": "lightgbm", "run": {"n_folds": 3, "seeds": 2}}
    )
    found = estimate(graph, Action(Op.DRAFT, ()), draft, lambda n: "", n_train=1000)
    assert found is not None and found.seconds == pytest.approx(50.0 / 5 * 6)  # 10 s a fold, 3 folds x 2 seeds
    assert "recipe lightgbm" in found.basis
    fresh = Proposal("a new family", "", {"brain": "recipes", "recipe": "forest", "run": {"n_folds": 5}})
    assert estimate(graph, Action(Op.DRAFT, ()), fresh, lambda n: "", n_train=1000) is None  # nothing measured it
    # An improve of n0001 that caps its rows at half: half the parent's measured seconds.
    capped = Proposal("half the rows", "", {**draft.meta, "run": {"n_folds": 5, "seeds": 1, "max_train_rows": 500}})
    found = estimate(graph, Action(Op.IMPROVE, ("n0001",)), capped, lambda n: "", n_train=1000)
    assert found is not None and found.seconds == pytest.approx(25.0)
    # An LLM's script has no recipe: the model library it imports is its family.
    assert family({}, "import numpy as np\nfrom catboost import CatBoostRegressor\n") == "catboost"
    assert family({}, "import pandas as pd\n") is None


def test_a_draft_whose_estimated_cost_exceeds_the_time_left_is_not_started(tmp_path):
    replies = [LGBM, "# another lightgbm draft\n" + LGBM, "# a third\n" + LGBM, PRIOR]
    agent, run = scripted_agent(make_task(tmp_path / "task"), tmp_path, replies, **{"budget.iterations": 10})
    first = agent.step(Action(Op.DRAFT, ()), 20)
    assert first.ok
    first.timing["exec_s"] = 100.0  # as measured on a slow machine: 100 s for a LightGBM script
    slow = agent.step(Action(Op.DRAFT, ()), 30)
    assert slow.status == FailureKind.OVER_BUDGET
    assert "about 100 s" in (slow.failure or "") and "exceeds the 30 s" in (slow.failure or "")
    assert not (run.node_dir(slow.id) / "stdout.txt").exists()  # its script never ran
    finished = [r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "node_finished"]
    assert finished[-1]["id"] == slow.id and finished[-1]["timing"]["estimate_s"] == pytest.approx(100.0)
    # 110 s for a 100-s estimate: within a fifth of its limit, as likely killed at it as not
    assert agent.step(Action(Op.DRAFT, ()), 110).status == FailureKind.OVER_BUDGET
    other = agent.step(Action(Op.DRAFT, ()), 30)  # a family nothing has measured: started
    assert other.ok


def test_a_blend_that_cannot_finish_in_the_time_left_is_not_started(tmp_path):
    # A 5-minute schools run started a blend with 1.3 s left; the run's end killed it.
    replies = [PRIOR, "# another\n" + PRIOR, PRIOR, PRIOR]
    agent, run = scripted_agent(make_task(tmp_path / "task"), tmp_path, replies, **{"budget.iterations": 10})
    first, second = agent.step(Action(Op.DRAFT, ()), 20), agent.step(Action(Op.DRAFT, ()), 20)
    assert first.ok and second.ok
    graph = agent.session.state.graph
    assert estimate(graph, Action(Op.BLEND, (first.id, second.id)), Proposal("", "", {}), lambda n: "", 100) is None
    for node_id, exec_s, cut in (("n0090", 3.0, False), ("n0091", 4.0, False), ("n0092", 0.5, True)):
        ran = Node(id=node_id, op=Op.BLEND, parents=(first.id, second.id), iteration=3, status="scored", score=0.5)
        ran.timing = {"exec_s": exec_s, "budget_s": 60.0, **({"cut_short": True} if cut else {})}
        graph.add(ran)  # blends that ran: the fastest to its end took 3 s (one the run's end cut says nothing)
    found = estimate(graph, Action(Op.BLEND, (first.id, second.id)), Proposal("", "", {}), lambda n: "", 100)
    assert found is not None and found.seconds == pytest.approx(3.0) and "n0090" in found.basis
    late = agent.step(Action(Op.BLEND, (first.id, second.id)), 2.0)
    assert late.status == FailureKind.OVER_BUDGET and "about 3 s" in (late.failure or "")
    assert not (run.node_dir(late.id) / "stdout.txt").exists()  # its script never ran


def test_a_draft_of_a_family_nothing_measured_is_not_started_with_less_time_than_reading_and_writing_took(tmp_path):
    replies = [LGBM, PRIOR, PRIOR, PRIOR]
    agent, run = scripted_agent(make_task(tmp_path / "task"), tmp_path, replies, **{"budget.iterations": 10})
    first = agent.step(Action(Op.DRAFT, ()), 20)
    assert first.ok and least_seconds(agent.session.state.graph) is None  # its script says nothing of its fitting
    # As a recipe says it (mlguild.run.fit_record): 40 s in all, 10 of them fitting; 30 s went
    # to reading the data and writing the outputs, which a script of any family does.
    first.timing.update(exec_s=40.0, fit_s=10.0)
    least = least_seconds(agent.session.state.graph)
    assert least is not None and least.seconds == pytest.approx(30.0) and first.id in least.basis
    short = agent.step(Action(Op.DRAFT, ()), 20)  # a family nothing measured, 20 s left: not started
    assert short.status == FailureKind.OVER_BUDGET and "about 30 s" in (short.failure or "")
    assert not (run.node_dir(short.id) / "stdout.txt").exists()
    started = agent.step(Action(Op.DRAFT, ()), 40)  # with the time: started
    assert started.ok
    # An improve of a parent whose run was cut short has no estimate: the same lower bound
    # (a 5-minute ames run started a TabM improve with 2.9 s left, and it was killed).
    started.timing["cut_short"] = True
    cut = agent.step(Action(Op.IMPROVE, (started.id,)), 20)
    assert cut.status == FailureKind.OVER_BUDGET and "about 30 s" in (cut.failure or "")


def test_near_the_end_the_search_ends_when_the_proposals_cannot_finish():
    graph = SearchGraph("maximize")
    graph.add(_recipe_node("n0001", "lightgbm", exec_s=50.0))
    over = Node(id="n0002", op=Op.DRAFT, parents=(), iteration=1, status=FailureKind.OVER_BUDGET)
    over.timing = {"brain_s": 0.01}  # the recipes: asking again costs nothing
    graph.add(over)
    nothing_fits(graph, limit=60.0, full_limit=60.0)  # not near the end: the brain may try again
    nothing_fits(graph, limit=20.0, full_limit=60.0)  # near it: a cheaper proposal may still come
    over.timing = {"brain_s": 12.0}  # a model's proposal: two more would cost more than 2 s of the 20
    with pytest.raises(BudgetExhausted):  # near the end, and no measured script is under 20 s
        nothing_fits(graph, limit=20.0, full_limit=60.0)
    graph.add(_recipe_node("n0003", "catboost", exec_s=5.0))  # a fast family: worth another proposal
    graph.add(Node(id="n0004", op=Op.DRAFT, parents=(), iteration=3, status=FailureKind.OVER_BUDGET))
    nothing_fits(graph, limit=20.0, full_limit=60.0)
    for i in (5, 6):  # three in a row that could not finish: the brain keeps asking for too much
        graph.add(Node(id=f"n000{i}", op=Op.DRAFT, parents=(), iteration=i, status=FailureKind.OVER_BUDGET))
    with pytest.raises(BudgetExhausted):
        nothing_fits(graph, limit=20.0, full_limit=60.0)


def test_a_seed_check_runs_only_where_its_reruns_fit_the_search_left(tmp_path):
    agent, run = scripted_agent(make_task(tmp_path / "task"), tmp_path, [PRIOR], **{"budget.iterations": 10})
    best = agent.step(Action(Op.DRAFT, ()), 20)
    graph, session = agent.session.state.graph, agent.session
    assert graph.evidence is not None and best.ok and best.score is not None
    near = Node(id="n0002", op=Op.DRAFT, parents=(), iteration=1, status="scored", score=best.score + 1e-6)
    near.timing = {"exec_s": 100.0}  # a near tie whose every re-run takes 100 s
    graph.add(near)
    assert graph.pending_evidence() is near
    run.config.budget.iterations = None
    run.config.budget.time_s = session.state.spent_s + session.clock.elapsed() + 10_000  # time for them
    waive_seed_checks(session)
    action = evidence_action(graph, run.config.search)
    assert action is not None and action.op == Op.RERUN and action.parents == ("n0002",)
    run.config.budget.time_s = session.state.spent_s + session.clock.elapsed() + 300  # 200 s of re-runs in 300
    waive_seed_checks(session)
    assert evidence_action(graph, run.config.search) is None
    assert graph.best() is best  # the near tie stays behind the best
    records = read_journal(run.path / "journal.jsonl")
    waived = [r for r in records if r["type"] == "seed_check_waived"]
    assert [w["candidate"] for w in waived] == ["n0002"] and "200 s" in waived[0]["reason"]
    assert "n0002" in replay(records, get_metric("roc_auc").direction).graph.waived  # a resume keeps it


def test_status_reports_the_share_of_the_time_used_and_the_nodes_killed_by_their_limit():
    records = [
        {"type": "run_started"},
        {"type": "session_started", "session_elapsed_s": 0.0},
        {"type": "node_finished", "session_elapsed_s": 60.0},
        {"type": "session_ended", "session_elapsed_s": 100.0},
        {"type": "final_chosen", "session_elapsed_s": 114.0},
    ]
    state = RunState(SearchGraph("maximize", Evidence()))
    timed_out = Node(id="n0001", op=Op.DRAFT, parents=(), iteration=0, status=FailureKind.TIMEOUT)
    timed_out.timing = {"exec_s": 48.0, "cut_short": True}
    state.graph.add(timed_out)
    state.graph.add(Node(id="n0002", op=Op.DRAFT, parents=(), iteration=1, status=FailureKind.OVER_BUDGET))
    found = time_use(records, state, 120.0)
    assert found["search_s"] == 100.0 and found["final_s"] == 14.0
    assert found["used_share"] == {"search": 0.8333, "final": 0.1167, "total": 0.95}
    assert (found["timed_out"], found["cut_short"], found["not_started"]) == (1, 1, 1)
    assert time_use(records, state, None)["used_share"]["total"] is None


def test_a_script_is_told_when_its_time_limit_started(tmp_path):
    # Its limit counts from its launch: a script that read its clock after its imports (torch
    # takes seconds) would set its deadlines late and be killed (a 12-s TabM draft was).
    import time

    told = "import os, time\nprint('clock', os.environ['MLGUILD_STARTED_AT'], time.time())\n" + PRIOR
    agent, run = scripted_agent(make_task(tmp_path / "task"), tmp_path, [told])
    before = time.time()
    node = agent.step(Action(Op.DRAFT, ()), 20)
    assert node.ok, node.failure
    line = next(x for x in (run.node_dir(node.id) / "stdout.txt").read_text().splitlines() if x.startswith("clock"))
    started, seen = (float(v) for v in line.split()[1:])
    assert before <= started <= seen <= started + node.timing["exec_s"] + 1.0
