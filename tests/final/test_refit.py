"""The final refit on all labelled rows: a separate node, checked, chosen or refused, and
the full-data directory (which holds holdout labels) gone afterwards."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import make_task

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.errors import BudgetExhausted
from mlguild.core.graph import Node
from mlguild.core.protocols import Action, Proposal
from mlguild.core.vocabulary import Op
from mlguild.final.grade import grade_once
from mlguild.final.stage import FinalStage, finish
from mlguild.firewall.guard import check_code
from mlguild.run.loop import Agent
from mlguild.run.refit import (
    DEFAULT_SCALE,
    FOLD_SHARE_MAX,
    LATER_MIN_S,
    LATER_SPREAD,
    UNKNOWN_OWN_S,
    after_folds_seconds,
    agreement,
    fold_share,
    full_data_dir,
    node_refit_seconds,
    refit_seconds,
)
from mlguild.run.reserve import final_reserve
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

# A logistic curve on x0; it records how many labelled rows it trained on. FLIP makes it
# predict the reverse when it sees more rows than the search gave it (a refit gone wrong).
SCRIPT = """
import math, os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={{"id": str}})
os.makedirs("output", exist_ok=True)
Path("output/rows.txt").write_text(str(len(train)))
if {crash} and len(train) > {search_rows}:
    raise RuntimeError("out of memory on the larger file")
sign = -1 if {flip} and len(train) > {search_rows} else 1
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={{"id": str}})
    p = [1 / (1 + math.exp(-3 * sign * x)) for x in frame["x0"]]
    pd.DataFrame({{"id": frame["id"], "y": p}}).to_csv("output/" + dst, index=False)
"""


def _run(tmp_path, sets=()):
    cfg = load_config(
        None,
        ["search.num_drafts=1", "search.draft_every=0", "budget.iterations=1", "sandbox.script_timeout_s=60", *sets],
    )
    return create_run(load_task(make_task(tmp_path / "task", n=400)), cfg, tmp_path / "runs")


def _searched(tmp_path, flip=False, crash=False):
    run = _run(tmp_path)
    split = run.workspace.manifest()["split"]
    code = SCRIPT.format(flip=flip, crash=crash, search_rows=split["train_rows"])
    agent = Agent(open_session(run, ScriptedBrain([Proposal("logistic on x0", code, {})]), get_sandbox("auto")))
    agent.run_loop()
    assert agent.session.state.best_id == "n0001"
    return run, agent, split


def _three_drafts(tmp_path):
    """A searched run of three drafts: n0001 the best (a logistic curve on x0), n0002 within
    noise of it (the same ranking, flatter), n0003 clearly worse (on the noise column x1);
    (run, agent, stop)."""
    run = _run(tmp_path, ["budget.iterations=3", "search.num_drafts=3"])
    good = SCRIPT.format(flip=False, crash=False, search_rows=run.workspace.manifest()["split"]["train_rows"])
    tie = good.replace("-3 * sign", "-2.9 * sign")
    weaker = good.replace('frame["x0"]', 'frame["x1"]')
    replies = [Proposal("logistic on x0", good, {}), Proposal("x0, flatter", tie, {}), Proposal("on x1", weaker, {})]
    agent = Agent(open_session(run, ScriptedBrain(replies), get_sandbox("auto")))
    stop = agent.run_loop()
    graph = agent.session.state.graph
    assert agent.session.state.best_id == "n0001" and graph["n0002"].ok and graph["n0003"].ok
    return run, agent, stop


def _rows(run, node_id):
    return int((run.node_dir(node_id) / "output" / "rows.txt").read_text())


def test_refit_trains_on_every_labelled_row_and_becomes_the_final_submission(tmp_path):
    run, agent, split = _searched(tmp_path)
    choice = FinalStage(agent.session).run_refit(60)
    graph = agent.session.state.graph
    refit = graph[choice["node"]]
    assert choice["refit"] and refit.op == "refit" and refit.parents == ("n0001",) and refit.status == "final"
    assert refit.score is None  # nothing may score it: its holdout is training data
    assert _rows(run, "n0001") == split["train_rows"]
    assert _rows(run, refit.id) == split["train_rows"] + split["holdout_rows"]
    assert choice["agreement"] > 0.99
    assert not full_data_dir(run.path).exists()  # the holdout labels are sealed again
    # The memory keeps how long the refit took against its node's run: the next run's prior.
    shared = agent.session.memory.shared
    assert shared is not None
    kept = shared.store.refits(run.profile.n_train, 1.5, exclude_run="another run")
    grow = (split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)) / split["train_rows"]
    expected = refit.timing["exec_s"] / (graph["n0001"].timing["exec_s"] * grow)
    assert kept == [("script", run.task_key, pytest.approx(expected, abs=1e-3))]
    final = run.path / "final"
    assert (final / "submission.csv").read_bytes() == (
        run.node_dir(refit.id) / "output" / "submission.csv"
    ).read_bytes()
    assert json.loads((final / "final.json").read_text())["node"] == refit.id
    # The journal replays the refit node and the choice; the grade is of the final submission.
    state = replay(read_journal(run.path / "journal.jsonl"), "maximize")
    assert state.final_choice["node"] == refit.id and state.graph[refit.id].status == "final"
    assert state.graph.best().id == "n0001"  # a refit never competes with search nodes
    grade = grade_once(run, agent.session.state, agent.session.scorers.grade)
    assert grade["node"] == refit.id and grade["best_node"] == "n0001" and grade["refit"] and grade["valid"]


@pytest.mark.parametrize("how", ["flip", "crash"])
def test_a_refit_that_breaks_falls_back_to_the_best_node(tmp_path, how):
    run, agent, _ = _searched(tmp_path, flip=how == "flip", crash=how == "crash")
    choice = FinalStage(agent.session).run_refit(60)
    assert choice["node"] == "n0001" and not choice["refit"]
    assert ("agrees with n0001 on only" if how == "flip" else "failed (crash)") in choice["reason"]
    assert (run.path / "final" / "submission.csv").read_bytes() == (run.best_dir / "submission.csv").read_bytes()
    assert not full_data_dir(run.path).exists()
    assert agent.session.state.graph.failed_leaves() == []  # a failed refit is not for the search to repair


def test_a_blend_is_refitted_member_by_member_then_blended_again(tmp_path):
    run = _run(tmp_path, ["search.num_drafts=2", "budget.iterations=2", "sandbox.script_timeout_s=120"])
    agent = Agent(open_session(run, RecipeBrain(), get_sandbox("auto")))
    agent.run_loop()
    members = tuple(n.id for n in agent.session.state.graph.ranked())
    fuse = agent.step(Action("blend", members), 120)
    assert fuse.ok, fuse.failure
    agent.session.state.best_id = fuse.id  # refit the blend, whatever won
    choice = FinalStage(agent.session).run_refit(300)
    graph = agent.session.state.graph
    refits = [n for n in graph if n.op == "refit"]
    report = json.loads((run.node_dir(fuse.id) / "output" / "fuse_weights.json").read_text())
    # The stacker was cross-validated beside the selection, and the better of them predicts.
    assert {"selection", "stack_linear", "stack_lgbm"} <= set(report["cross_validated_scores"]), report
    used = report["members_used"]
    if report["method"] == "selection":  # a member the selection gave no weight is not refitted
        assert used == [m for m in members if report["weights"][m] > 0]
    else:  # a stacker reads every member
        assert used == list(members)
    weighted = [m for m in members if m in used]
    assert [n.meta["refit_of"] for n in refits] == [*weighted, fuse.id]
    blend = refits[-1]
    assert blend.meta["stage"] == {m: r.id for m, r in zip(weighted, refits, strict=False)}
    staged = run.node_dir(blend.id) / "parents"
    for member, refit in blend.meta["stage"].items():
        assert (staged / member / "submission.csv").read_bytes() == (
            run.node_dir(refit) / "output" / "submission.csv"
        ).read_bytes()
    assert choice["node"] == blend.id and choice["refit"], choice
    # With minutes left for seconds of refits, each member's folds may use nine tenths of its limit.
    for member in refits[:-1]:
        assert member.meta["fold_share"] == FOLD_SHARE_MAX
        assert "final refit: the folds may use 90%" in (run.node_dir(member.id) / "stdout.txt").read_text()


def test_a_paced_script_is_not_told_to_use_more_of_its_refits_limit(tmp_path):
    _, agent, _ = _searched(tmp_path)
    best = agent.session.state.graph["n0001"]
    best.timing.update(exec_s=40.0, budget_s=60.0)  # it used most of its limit: paced by it
    paced = FinalStage(agent.session).run_refit(300.0)
    assert "fold_share" not in agent.session.state.graph[paced["node"]].meta
    best.timing.update(exec_s=2.0)  # done in a fraction of it
    free = FinalStage(agent.session).run_refit(300.0)
    assert agent.session.state.graph[free["node"]].meta["fold_share"] == FOLD_SHARE_MAX


def test_a_refits_folds_may_run_until_the_refits_after_it_must_start():
    # A 5-minute digits run: its LightGBM member's refit had 84 s left and the refits after it
    # were estimated at 32 s; its folds stopped at 42 s, after 3 of 5 folds.
    assert fold_share(84.0, 32.0, 84.0) == pytest.approx(52.0 / 84.0, abs=1e-3)
    assert fold_share(139.0, 90.0, 139.0) is None  # no more than a script's own half: not said
    assert fold_share(300.0, 1.0, 300.0) == FOLD_SHARE_MAX  # the rest of the limit predicts and writes
    assert fold_share(84.0, 0.0, 40.0) == FOLD_SHARE_MAX and fold_share(10.0, 0.0, 0.0) is None


def test_a_refits_folds_leave_its_own_writing_and_each_later_refit_with_a_margin():
    # A 5-minute churn run: its first member (34 s, 29 of them fitting) was followed by five
    # refits of 2-3 s; at a flat 5 s each its folds kept to half their limit and fitted 4 of 5.
    def node(i, exec_s, fit_s=None):
        made = Node(id=f"n{i:04d}", op="draft", parents=(), iteration=i, status="scored", score=0.5)
        made.timing.update(exec_s=exec_s, budget_s=120.0, **({} if fit_s is None else {"fit_s": fit_s}))
        return made

    first, later = node(1, 34.0, 29.0), [node(i, 2.0, 0.5) for i in range(2, 7)]
    each = node_refit_seconds(later[0], 1.0, 1.0)
    rest = after_folds_seconds(first, later, 1.0, lambda n: 1.0, False, harness_s=0.1)
    assert rest == pytest.approx(5.0 + 5 * (each + LATER_MIN_S))  # its own 5 s; a second at least each
    assert fold_share(66.0, rest, 66.0) > 0.5  # its folds may use more than their own half
    slow = node(7, 100.0, 90.0)  # a long refit after it: a tenth of its estimate, and the harness's
    big = node_refit_seconds(slow, 1.0, 1.0)
    assert after_folds_seconds(first, [slow], 1.0, lambda n: 1.0, False, 0.1) == pytest.approx(
        5.0 + big + 0.1 + LATER_SPREAD * big
    )
    assert after_folds_seconds(node(8, 34.0), [], 1.0, lambda n: 1.0, False, 0.1) == UNKNOWN_OWN_S  # not said


def test_search_nodes_may_not_reach_the_refit_data(tmp_path):
    run = _run(tmp_path)
    agent = Agent(open_session(run, ScriptedBrain(), get_sandbox("auto")))
    code = "print(open('../../final/data/train.csv').read())\n"
    node_dir = run.node_dir("n0001")
    node_dir.mkdir(parents=True)
    verdict = check_code(
        code, node_dir.resolve(), agent.session.executor.forbidden, data_dir=run.workspace.data_dir.resolve()
    )
    assert not verdict.ok and "final" in verdict.reason


def test_the_search_keeps_back_the_time_the_refit_needs(tmp_path):
    run, agent, split = _searched(tmp_path)
    graph = agent.session.state.graph
    best = graph["n0001"]
    best.timing["exec_s"] = 20.0
    growth = (split["train_rows"] + split["holdout_rows"]) / split["train_rows"]
    best.timing["budget_s"] = 60.0
    assert refit_seconds(run, graph, best) == pytest.approx(20.0 * growth * DEFAULT_SCALE)
    best.timing["exec_s"] = 50.0  # paced by its budget: still what it measured, scaled (issue 38)
    assert refit_seconds(run, graph, best) == pytest.approx(50.0 * growth * DEFAULT_SCALE)
    assert final_reserve(run, graph).refit_s == pytest.approx(50.0 * growth * DEFAULT_SCALE)  # no time budget set
    best.timing["exec_s"] = 10.0
    run.config.budget.time_s = (
        agent.session.state.spent_s + agent.session.clock.elapsed() + 70
    )  # under the 60 s script limit after the reserve
    run.config.budget.iterations = None
    run.config.budget.script_share = 1.0
    # The reserve (the refit, the audit and the grade), and no longer than leaves the script's own refit time.
    reserve = agent.session.clock.reserve(graph)
    assert reserve.refit_s == pytest.approx(10.0 * growth * DEFAULT_SCALE)
    assert agent.session.clock.next_limit_s(graph) == pytest.approx(
        min(70 - reserve.total_s, (70 - reserve.audit_s) / (1 + growth * DEFAULT_SCALE)), abs=1.0
    )
    run.config.budget.script_share = 0.1  # one script may use at most a tenth of the run's budget
    assert agent.session.clock.next_limit_s(graph) == pytest.approx(0.1 * run.config.budget.time_s)
    run.config.final.refit = False
    assert refit_seconds(run, graph, best) == 0.0


def test_the_reserve_for_a_blend_counts_every_member_it_will_refit(tmp_path):
    run, agent, split = _searched(tmp_path)
    graph = agent.session.state.graph
    growth = (split["train_rows"] + split["holdout_rows"]) / split["train_rows"]
    best = graph["n0001"]
    best.timing.update(exec_s=10.0, budget_s=60.0)
    members = []
    for i, exec_s in enumerate((20.0, 25.0), start=2):  # two more scored nodes a fuse may blend (not paced)
        node = Node(id=f"n000{i}", op="draft", parents=(), iteration=i - 1, status="scored", score=0.8)
        node.timing.update(exec_s=exec_s, budget_s=60.0)
        graph.add(node)
        members.append(node.id)
    alone = final_reserve(run, graph).refit_s
    assert alone == pytest.approx(10.0 * growth * DEFAULT_SCALE)
    # A blend the search is about to make: every member's refit, and the blend's own rerun.
    planned = final_reserve(run, graph, planned=("n0001", *members)).refit_s
    assert planned == pytest.approx((10.0 + 20.0 + 25.0) * growth * DEFAULT_SCALE)
    # Once a blend has run, a blend's rerun is priced at its search seconds, not grown: it fits
    # a few weights on stored predictions.
    blend = Node(id="n0004", op=Op.BLEND, parents=tuple(members), iteration=3, status="scored", score=0.81)
    blend.timing.update(exec_s=4.0)
    graph.add(blend)
    with_blend = final_reserve(run, graph, planned=("n0001", *members)).refit_s
    assert with_blend == pytest.approx(planned + 4.0 * DEFAULT_SCALE)
    assert refit_seconds(run, graph, blend) == pytest.approx(
        (20.0 + 25.0) * growth * DEFAULT_SCALE + 4.0 * DEFAULT_SCALE
    )
    run.config.final.max_refit_share = 1.0  # any reserve is kept (the default caps it at half the budget)
    audit = agent.session.clock.reserve(graph).audit_s
    # 3 s more than the planned blend's reserve (its rerun priced from the blend that ran): the
    # cap (the whole budget here) keeps it, whatever the session's clock read so far.
    run.config.budget.time_s = agent.session.state.spent_s + agent.session.clock.elapsed() + with_blend + audit + 3
    run.config.budget.iterations = None
    agent.session.clock.next_limit_s(agent.session.state.graph)  # time enough while no blend is planned
    with pytest.raises(BudgetExhausted):  # but not for the blend and its refit
        agent.session.clock.next_limit_s(agent.session.state.graph, ("n0001", *members))


def _ends_in(agent, seconds: float) -> None:
    """The run's time budget ends ``seconds`` from now, with no iteration budget."""
    run = agent.session.run
    run.config.budget.time_s = agent.session.state.spent_s + agent.session.clock.elapsed() + seconds
    run.config.budget.iterations = None
    run.config.budget.script_share = 1.0


def test_a_script_started_near_the_end_leaves_time_for_its_own_refit(tmp_path):
    # Issue 25: a 1-minute run started a draft at 0:54, the draft became the best node, and
    # its refit then had 2 s of the 4 s it needed. Every script's limit leaves its own refit time.
    run, agent, split = _searched(tmp_path)
    graph, clock = agent.session.state.graph, agent.session.clock
    frozen = clock.elapsed()
    clock.elapsed = lambda: frozen  # the session's clock stands still: no second passes between the lines below
    growth = (split["train_rows"] + split["holdout_rows"]) / split["train_rows"]
    graph["n0001"].timing.update(exec_s=0.5, budget_s=60.0)  # the best so far refits in a second
    _ends_in(agent, 30.0)
    audit = clock.reserve(graph).audit_s
    limit = clock.next_limit_s(graph)
    assert limit == pytest.approx(
        (30.0 - audit) / (1 + growth * DEFAULT_SCALE), abs=0.5
    )  # not 30 s less the best's second
    # The script uses all of it and becomes the best: its refit still fits.
    draft = Node(id="n0002", op="draft", parents=(), iteration=1, status="scored", score=0.99)
    draft.timing.update(exec_s=limit, budget_s=limit)
    graph.add(draft)
    assert graph.best().id == "n0002"
    assert refit_seconds(run, graph, draft) <= 30.0 - audit - limit + 1e-6
    # The best's refit (16 s) is over the reserve's cap (half the budget): the reserve is sized
    # for a node near the best whose refit fits it, n0001's (as good, by the promotion margin).
    graph["n0001"].score = 0.989
    _ends_in(agent, 10.0)  # too little left for most scripts and their refits: the last slot
    last = clock.next_limit_s(graph)
    assert last == pytest.approx((10.0 - audit) / (1 + growth * DEFAULT_SCALE), abs=0.5) and last < 5.0
    graph["n0001"].timing.update(exec_s=5.0)
    graph["n0002"].timing.update(exec_s=5.0)
    with pytest.raises(BudgetExhausted):  # not even the fastest script fits: the search stops
        clock.next_limit_s(graph)


def test_the_scripts_other_workers_run_keep_back_their_refits_too(tmp_path):
    run, agent, split = _searched(tmp_path)
    graph, clock = agent.session.state.graph, agent.session.clock
    growth = (split["train_rows"] + split["holdout_rows"]) / split["train_rows"]
    graph["n0001"].timing.update(exec_s=0.5, budget_s=60.0)
    _ends_in(agent, 60.0)
    run.config.final.max_refit_share = 1.0
    audit = clock.reserve(graph).audit_s
    clock.in_flight["n0002"] = 28.0  # another worker's script, expected to take 28 s: it may become the best
    assert clock.next_limit_s(graph) == pytest.approx(60.0 - 28.0 * growth * DEFAULT_SCALE - audit, abs=0.5)
    clock.in_flight.clear()
    assert clock.next_limit_s(graph) == pytest.approx((60.0 - audit) / (1 + growth * DEFAULT_SCALE), abs=0.5)


def test_agreement_measures():
    import pandas as pd

    a = pd.DataFrame({"id": ["1", "2", "3", "4"], "y": ["0.1", "0.4", "0.35", "0.8"]})
    same_order = pd.DataFrame({"id": ["4", "3", "2", "1"], "y": ["0.9", "0.3", "0.5", "0.2"]})
    assert agreement("probability", a, same_order, "id") == pytest.approx(1.0)
    assert agreement("probability", a, a.assign(y="0.5"), "id") == 0.0  # constant: no correlation
    # a prior refitted on more rows: both tie every row, so they rank the rows alike
    assert agreement("probability", a.assign(y="0.2"), a.assign(y="0.25"), "id") == 1.0
    labels = pd.DataFrame({"id": ["1", "2", "3", "4"], "y": ["a", "b", "a", "c"]})
    assert agreement("label", labels, labels.assign(y=["a", "b", "c", "c"]), "id") == 0.75


def test_no_refit_when_too_little_time_is_left(tmp_path):
    _run_dir, agent, _ = _searched(tmp_path)
    agent.session.state.graph["n0001"].timing.update(exec_s=50.0, budget_s=60.0)
    choice = FinalStage(agent.session).run_refit(30)
    assert choice["node"] == "n0001" and "not enough time left" in choice["reason"]
    assert [n.op for n in agent.session.state.graph] == ["draft"]  # nothing was started


def test_a_blend_within_noise_of_the_best_node_is_the_final_base(tmp_path):
    import shutil

    import pandas as pd

    from mlguild.final.base import final_base

    run, agent, _ = _searched(tmp_path)
    graph = agent.session.state.graph
    best = graph["n0001"]
    # A stand-in blend: n0001's predictions with a little noise, scored a bit lower.
    blend = graph.add(type(best)(id="n0002", op="blend", parents=("n0001",), iteration=1))
    blend.status, blend.score, blend.timing = "scored", best.score - 0.001, dict(best.timing)
    shutil.copytree(run.node_dir("n0001"), run.node_dir("n0002"))
    holdout = run.node_dir("n0002") / "output" / "holdout.csv"
    frame = pd.read_csv(holdout, dtype={"id": str})
    frame["y"] = (frame["y"] + np.random.default_rng(0).normal(scale=0.01, size=len(frame))).clip(0, 1)
    frame.to_csv(holdout, index=False)
    base, why = final_base(run, graph, agent.session.scorers.holdout, best)
    assert base.id == "n0002" and "within noise" in why, why
    frame["y"] = 1 - frame["y"]  # now clearly worse: the best node stays
    frame.to_csv(holdout, index=False)
    base, why = final_base(run, graph, agent.session.scorers.holdout, best)
    assert base.id == "n0001" and "better than the best blend n0002" in why, why
    run.config.final.tie_share = 0.0  # never prefer a blend
    frame["y"] = 1 - frame["y"]
    frame.to_csv(holdout, index=False)
    assert final_base(run, graph, agent.session.scorers.holdout, best)[0].id == "n0001"


def test_the_reserve_follows_the_measured_refit_time(tmp_path):
    # Issue 38: a 5-minute run kept back its nodes' whole time limits and ended a minute early.
    run, agent, split = _searched(tmp_path)
    graph = agent.session.state.graph
    growth = (split["train_rows"] + split["holdout_rows"]) / split["train_rows"]
    best = graph["n0001"]
    run.config.budget.time_s = 300.0
    best.timing.update(exec_s=2.0, budget_s=120.0)  # quick nodes
    quick = final_reserve(run, graph)
    best.timing.update(exec_s=40.0)  # slow ones (paced by their limit, too)
    slow = final_reserve(run, graph)
    assert quick.refit_s == pytest.approx(2.0 * growth * DEFAULT_SCALE) and slow.refit_s == pytest.approx(
        40.0 * growth * DEFAULT_SCALE
    )
    assert slow.total_s > quick.total_s and slow.audit_s == quick.audit_s > 0
    # A best node whose refit needs more than the cap (half the budget): the reserve is sized
    # for the best node near it whose refit fits the cap (the one the final stage would refit);
    # a node far behind is not one (issue 40: a linear model far behind sized a ten-million-row
    # run's reserve at 75 s, and the final stage had no time to refit anything): then the cap,
    # for the best node's refit on as many rows as it allows.
    best.timing.update(exec_s=200.0)
    cheap = Node(id="n0002", op="draft", parents=(), iteration=1, status="scored", score=0.5)
    cheap.timing.update(exec_s=10.0, budget_s=120.0)
    graph.add(cheap)
    capped = final_reserve(run, graph)
    assert capped.node == "n0001" and capped.refit_s == pytest.approx(0.5 * 300.0)
    cheap.score = best.score  # as good as the best: its refit is what the final stage would make
    capped = final_reserve(run, graph)
    assert capped.node == "n0002" and capped.refit_s == pytest.approx(10.0 * growth * DEFAULT_SCALE)


def test_the_reserve_waits_for_a_blends_refits_only_when_the_blend_is_near_the_best(tmp_path):
    # Issue 38: a 5-minute ames run kept 103 s for the refits of a blend far behind its best
    # node; the final stage took the best node (better on 95% of resamples) and refitted it in 7 s.
    run, agent, split = _searched(tmp_path)
    graph = agent.session.state.graph
    growth = (split["train_rows"] + split["holdout_rows"]) / split["train_rows"]
    best = graph["n0001"]
    best.timing.update(exec_s=2.0, budget_s=120.0)
    slow = Node(id="n0002", op="draft", parents=(), iteration=1, status="scored", score=best.score)
    slow.timing.update(exec_s=40.0, budget_s=120.0)
    graph.add(slow)
    blend = Node(id="n0003", op=Op.BLEND, parents=("n0001", "n0002"), iteration=2, status="scored")
    blend.timing.update(exec_s=1.0, budget_s=120.0)
    margin = graph.margin(best, graph.noise_floor())
    sign = 1.0 if graph.direction == "maximize" else -1.0
    blend.score = best.score - sign * 3 * margin  # far behind the best: not taken, not waited for
    graph.add(blend)
    assert graph.best().id == "n0001"
    far = final_reserve(run, graph)
    assert far.node == "n0001" and far.refit_s == pytest.approx(2.0 * growth * DEFAULT_SCALE)
    blend.score = best.score - sign * margin / 2  # within the margin: the final stage may take it
    near = final_reserve(run, graph)
    # its members' refits grown, its own rerun at its search seconds
    assert near.node == "n0003" and near.refit_s == pytest.approx(((2.0 + 40.0) * growth + 1.0) * DEFAULT_SCALE)


def test_a_run_whose_search_would_overrun_still_refits_its_final(tmp_path):
    # Issue 39: the search overran, the best node's refit needed 380 s of the 133 s left, and
    # the final submission was trained on the search's rows alone.
    run, agent, stop = _three_drafts(tmp_path)
    split = run.workspace.manifest()["split"]
    graph = agent.session.state.graph
    graph["n0001"].timing.update(exec_s=300.0, budget_s=300.0)  # as measured: its refit needs about 500 s
    graph["n0002"].timing.update(exec_s=1.0, budget_s=300.0)
    graph["n0003"].timing.update(exec_s=0.5, budget_s=300.0)
    _ends_in(agent, 60.0)  # what the overrun left
    choice = finish(agent.session, stop).choice
    assert choice is not None and choice["refit"] is True
    assert choice["refit_fallback"]["wanted"] == "n0001" and choice["refit_fallback"]["refitted"] == "n0002"
    assert choice["base"] == "n0002" and "the refit is of n0002" in choice["reason"]
    refit = graph[choice["node"]]
    assert refit.op == "refit" and refit.parents[0] == "n0002"
    assert _rows(run, refit.id) == split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    saved = json.loads((run.path / "final" / "final.json").read_text())
    assert saved["refit_fallback"] == choice["refit_fallback"]
    # Only a clearly worse node fits: the best node's own submission, not the worse model refitted.
    graph["n0002"].timing.update(exec_s=100.0)
    graph[choice["node"]].timing.update(exec_s=200.0)  # what its refit measured, as if so
    again = FinalStage(agent.session).run_refit(60.0)
    assert again["node"] == "n0001" and again["refit"] is False and "nor any node within noise" in again["reason"]


def test_a_refit_on_part_of_the_rows_gives_way_to_a_node_within_noise_refitted_on_every_row(tmp_path):
    # Issue 40: ten-million-row runs refitted their blend on a fifth, then on half, of the
    # labelled rows, where the blend's best member, within noise of it, could have been
    # refitted on all of them.
    run, agent, _ = _three_drafts(tmp_path)
    split = run.workspace.manifest()["split"]
    searched = split["train_rows"]
    labelled = searched + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    graph = agent.session.state.graph
    # The best node trained on a tenth of the rows for 100 s: all of them need about 1,250 s
    # per search file (times the growth), 400 s fit under a third of them, 1,000 s about 0.8.
    graph["n0001"].meta.update(train_rows=searched // 10, train_rows_of=searched)
    graph["n0001"].timing.update(exec_s=100.0, fit_s=100.0, budget_s=300.0)
    graph["n0002"].timing.update(exec_s=1.0, budget_s=300.0)
    graph["n0003"].timing.update(exec_s=1.0, budget_s=300.0)
    choice = FinalStage(agent.session).run_refit(400.0)
    assert choice["refit"] is True and choice["refit_fallback"]["refitted"] == "n0002", choice["reason"]
    assert _rows(run, choice["node"]) == labelled
    graph[choice["node"]].timing.pop("exec_s")  # its measured scale would price the next refit: forgotten
    # Over half of them fit: the tie refitted on every row still comes first.
    tie_first = FinalStage(agent.session).run_refit(1000.0)
    assert tie_first["refit_fallback"]["refitted"] == "n0002" and _rows(run, tie_first["node"]) == labelled
    graph[tie_first["node"]].timing.pop("exec_s")
    graph["n0002"].timing["exec_s"] = 10_000.0  # the tie's refit no longer fits: the best node on those
    again = FinalStage(agent.session).run_refit(1000.0)
    assert again["refit"] is True and "refit_fallback" not in again, again["reason"]
    assert graph[again["node"]].meta["refit_of"] == "n0001" and "a random sample of" in again["reason"]
    assert labelled // 2 < _rows(run, again["node"]) < labelled
    # A node the bootstrap tells from the best qualifies too when within the search's promotion
    # margin: against a refit on a third of the rows, a small edge counts less than the rows.
    graph[again["node"]].timing.pop("exec_s")
    plain = FinalStage(agent.session).run_refit(400.0)  # the x1 model, far behind: the best on a share
    assert "refit_fallback" not in plain and "a random sample of" in plain["reason"]
    graph[plain["node"]].timing.pop("exec_s")
    graph.evidence = replace(graph.evidence, assumed_noise=1.0)  # a margin as wide as the score itself
    wide = FinalStage(agent.session).run_refit(400.0)
    assert wide["refit_fallback"]["refitted"] == "n0003" and _rows(run, wide["node"]) == labelled


def test_with_no_partial_refit_possible_a_node_within_the_margin_is_refitted_on_every_row(tmp_path):
    # Stop 50, ames at 5 minutes: a blend's chain needed about 160 s with 101 s left; the rows
    # that fit were fewer than the search had trained on (no partial refit) and no node was
    # within noise of it by the bootstrap, so nothing was refitted and 101 s went unused, though
    # the reserve had been sized for a node within the search's promotion margin.
    run, agent, _ = _three_drafts(tmp_path)
    split = run.workspace.manifest()["split"]
    searched = split["train_rows"]
    labelled = searched + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    grow = labelled / searched
    assert grow < 2  # else half of the labelled rows would be more than the search's
    graph = agent.session.state.graph
    graph["n0001"].timing.update(exec_s=100.0, fit_s=90.0, budget_s=300.0)  # 10 s besides fitting
    graph["n0002"].timing.update(exec_s=10_000.0, budget_s=300.0)  # the tie's refit does not fit
    graph["n0003"].timing.update(exec_s=1.0, budget_s=300.0)
    # Time for the best node's 10 s besides fitting and its fitting on more than half of the
    # labelled rows, but on fewer than the search's (90 s per search file), at the default scale.
    left = DEFAULT_SCALE * (10.0 + 90.0 * (0.5 * grow + 1) / 2)
    narrow = FinalStage(agent.session).run_refit(left)
    assert narrow["refit"] is False and "nor any node within noise of it" in narrow["reason"], narrow["reason"]
    graph.evidence = replace(graph.evidence, assumed_noise=1.0)  # a margin as wide as the score itself
    wide = FinalStage(agent.session).run_refit(left)
    assert wide["refit_fallback"]["refitted"] == "n0003" and _rows(run, wide["node"]) == labelled


def test_the_refit_may_take_all_the_time_left_not_only_a_search_scripts_limit(tmp_path):
    # Issue 40: the final stage gave a ten-million-row refit the 300 s a search script may take,
    # with 650 s of the run left, and refitted on a fifth of the rows.
    from mlguild.run.budget import Stop

    run, agent, split = _searched(tmp_path)  # sandbox.script_timeout_s=60
    best = agent.session.state.graph["n0001"]
    best.timing.update(exec_s=100.0, budget_s=300.0)  # its refit: about 100 s x growth x the default scale, over 60 s
    _ends_in(agent, 400.0)
    choice = finish(agent.session, Stop("budget", "time")).choice
    assert choice is not None and choice["refit"] is True and "not enough time" not in choice["reason"], choice
    refit = agent.session.state.graph[choice["node"]]
    assert refit.timing["budget_s"] > 300.0
    assert _rows(run, refit.id) == split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)


def test_a_blend_whose_refit_is_over_the_cap_does_not_end_the_search(tmp_path):
    # A 2-minute run ended its search at 0:40 of 2:00: the blend it was about to make would
    # need 80 s to refit, more than the 36 s cap, and the limit left for it came out negative.
    _, agent, _ = _searched(tmp_path)
    graph = agent.session.state.graph
    graph["n0001"].timing.update(exec_s=14.5, budget_s=48.0)
    for i, exec_s in ((2, 5.9), (3, 18.4)):
        node = Node(id=f"n000{i}", op="draft", parents=(), iteration=i - 1, status="scored", score=0.5)
        node.timing.update(exec_s=exec_s, budget_s=30.0)
        graph.add(node)
    _ends_in(agent, 80.0)  # the cap: half of about 90 s
    reserve = agent.session.clock.reserve(graph, ("n0001", "n0002", "n0003"))
    assert not reserve.planned and reserve.node == "n0001"  # sized for the best node's refit instead
    assert agent.session.clock.next_limit_s(graph, ("n0001", "n0002", "n0003")) > 10.0


def test_a_blend_whose_refit_stops_part_way_keeps_a_refitted_member_within_noise(tmp_path):
    # A 2-minute run on a loaded machine refitted two of a blend's members in 42 s, had no
    # time left for the blend's own rerun, and ended with the blend trained on the search's rows.
    run = _run(tmp_path, ["budget.iterations=3", "search.num_drafts=3"])
    split = run.workspace.manifest()["split"]
    good = SCRIPT.format(flip=False, crash=False, search_rows=split["train_rows"])
    tie = good.replace("-3 * sign", "-2.9 * sign")
    breaks = SCRIPT.format(flip=False, crash=True, search_rows=split["train_rows"])  # fails on the refit's rows
    replies = [Proposal("logistic on x0", good, {}), Proposal("flatter", tie, {}), Proposal("blend", breaks, {})]
    agent = Agent(open_session(run, ScriptedBrain(replies), get_sandbox("auto")))
    agent.run_loop()
    graph = agent.session.state.graph
    blend = graph["n0003"]
    assert blend.ok
    blend.op, blend.parents = Op.BLEND, ("n0001", "n0002")  # as if it blended them
    agent.session.state.best_id = blend.id
    choice = FinalStage(agent.session).run_refit(120)
    refits = [n for n in graph if n.op == Op.REFIT]
    assert [n.meta["refit_of"] for n in refits] == ["n0001", "n0002", "n0003"] and refits[-1].status == "crash"
    assert choice["refit"] is True and choice["node"] == refits[0].id  # n0001's refit, not n0003's search model
    assert choice["refit_fallback"]["wanted"] == "n0003" and choice["refit_fallback"]["refitted"] == "n0001"
    assert "a member within noise of n0003" in choice["reason"]


def test_a_blend_that_is_one_member_is_refitted_as_that_member_when_its_chain_does_not_fit(tmp_path):
    # Issue 40: a ten-million-row run's final base was a blend whose selection gave all its
    # weight to one LightGBM member; its chain (the member's folds, then the blend) did not fit,
    # and the final was refitted on part of the rows, then cut by its limit.
    run = _run(tmp_path, ["budget.iterations=3", "search.num_drafts=3"])
    split = run.workspace.manifest()["split"]
    good = SCRIPT.format(flip=False, crash=False, search_rows=split["train_rows"])
    tie = good.replace("-3 * sign", "-2.9 * sign")
    replies = [Proposal("logistic on x0", good, {}), Proposal("flatter", tie, {}), Proposal("blend", good, {})]
    agent = Agent(open_session(run, ScriptedBrain(replies), get_sandbox("auto")))
    agent.run_loop()
    graph = agent.session.state.graph
    blend = graph["n0003"]
    blend.op, blend.parents = Op.BLEND, ("n0001", "n0002")  # as if it blended them, n0001 alone weighted
    weights = {"weights": {"n0001": 1.0, "n0002": 0.0}, "method": "selection", "members_used": ["n0001"]}
    (run.node_dir("n0003") / "output" / "fuse_weights.json").write_text(json.dumps(weights))
    agent.session.state.best_id = blend.id
    for node, exec_s in (("n0001", 1.0), ("n0002", 1.0), ("n0003", 200.0)):
        graph[node].timing.update(exec_s=exec_s, budget_s=300.0)
    choice = FinalStage(agent.session).run_refit(120)  # the chain: about 250 s; n0001 by itself: a few
    refits = [n for n in graph if n.op == Op.REFIT]
    assert [n.meta["refit_of"] for n in refits] == ["n0001"], choice["reason"]
    assert choice["refit"] is True and choice["base"] == "n0001" and "refit_fallback" not in choice
    assert "n0003 gives all its weight to n0001" in choice["reason"]
    assert _rows(run, choice["node"]) == split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    # A stacker transforms its members' predictions: no member stands for it (the member may
    # still be the fallback, a node within noise whose refit fits).
    weights["method"] = "stack_linear"
    (run.node_dir("n0003") / "output" / "fuse_weights.json").write_text(json.dumps(weights))
    for refit in refits:
        refit.timing.pop("exec_s")  # their measured scale would price the next refit: forgotten
    again = FinalStage(agent.session).run_refit(120)
    assert "gives all its weight" not in again["reason"] and again["refit_fallback"]["wanted"] == "n0003"


def test_a_refit_whose_fits_stop_at_their_deadline_trains_on_every_row_though_estimated_over_the_time_left(tmp_path):
    # Issue 40: a boosting script's refit on ten million rows, estimated past the time left, was
    # refitted on part of the rows; its fits stop growing trees at their deadline, so all of
    # them fit, with fewer trees.
    run, agent, split = _searched(tmp_path)
    labelled = split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    best = agent.session.state.graph["n0001"]
    best.meta.update(train_rows=split["train_rows"] // 10, train_rows_of=split["train_rows"])
    # One fold of three took 10 s on a tenth of the rows: one model on every row about 150 s
    # times the growth, times the family's scale; reading and predicting 20 s.
    best.timing.update(exec_s=30.0, fit_s=10.0, fit_folds=1, cv_folds=3, budget_s=300.0)
    needed = refit_seconds(run, agent.session.state.graph, best)
    left = 0.75 * needed
    plain = FinalStage(agent.session).run_refit(left)  # it never said its fits stop in time
    assert plain["refit"] is True and "a random sample of" in plain["reason"]
    assert split["train_rows"] // 10 <= _rows(run, plain["node"]) < labelled
    agent.session.state.graph[plain["node"]].timing.pop("exec_s")
    best.timing["fits_by_deadline"] = True
    choice = FinalStage(agent.session).run_refit(left)
    assert choice["refit"] is True and "stop growing trees at their deadline" in choice["reason"], choice["reason"]
    refit = agent.session.state.graph[choice["node"]]
    assert _rows(run, refit.id) == labelled and refit.meta.get("one_model") is True
    refit.timing.pop("exec_s")
    # Past twice the time left, a deadline would leave it too few trees: part of the rows again.
    short = FinalStage(agent.session).run_refit(0.4 * needed)
    assert "a random sample of" in short["reason"] and _rows(run, short["node"]) < labelled


def test_a_node_within_noise_whose_fits_stop_at_their_deadline_stands_in_on_every_row(tmp_path):
    # Issue 40: a ten-million-row run's blend could not be refitted, and its HistGradientBoosting
    # member, within noise of it, was estimated past the time left: the blend was refitted on
    # half of the rows instead, and its own rerun was killed by its limit.
    run, agent, _ = _three_drafts(tmp_path)
    split = run.workspace.manifest()["split"]
    labelled = split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    graph = agent.session.state.graph
    graph["n0001"].timing.update(exec_s=10_000.0, budget_s=300.0)  # its refit fits on no share of the rows
    # The tie: one fold of three took 100 s, reading and predicting 20 s.
    graph["n0002"].timing.update(exec_s=120.0, fit_s=100.0, fit_folds=1, cv_folds=3, budget_s=300.0)
    graph["n0003"].timing.update(exec_s=1.0, budget_s=300.0)
    left = 0.7 * refit_seconds(run, graph, graph["n0002"])
    plain = FinalStage(agent.session).run_refit(left)  # it never said its fits stop in time
    assert plain["refit"] is False and "nor any node within noise" in plain["reason"], plain["reason"]
    graph["n0002"].timing["fits_by_deadline"] = True
    choice = FinalStage(agent.session).run_refit(left)
    assert choice["refit_fallback"]["refitted"] == "n0002", choice["reason"]
    assert "its fits stop at their deadline" in choice["reason"] and _rows(run, choice["node"]) == labelled
