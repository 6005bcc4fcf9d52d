"""The loop end to end with the scripted brain: real sandbox, real scorer, real journal."""

import json
import subprocess
import sys
import time

import pytest
from conftest import BAD_HEADER, CHEAT, CRASH, GOOD, HANG, NO_OUTPUT, SYNTAX, kill_after_finished, make_task
from conftest import scripted_agent as _agent

from mlguild.final.grade import grade_once
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay


def test_loop_scores_failures_and_best(small_task, tmp_path):
    replies = [CRASH, GOOD, SYNTAX, NO_OUTPUT, BAD_HEADER, HANG, CHEAT]
    # The limit is for HANG, the one script that meets it: 15 s is far more than GOOD needs (a
    # pandas import and two small files) on a machine busy with other tests, where 2 s was not.
    agent, run = _agent(small_task, tmp_path, replies, **{"budget.iterations": 9, "sandbox.script_timeout_s": 15})
    stop = agent.run_loop()
    assert stop.finished and stop.which == "iterations" and str(stop) == "budget: iterations"
    graph = agent.session.state.graph
    statuses = [n.status for n in graph]
    assert statuses[:7] == [
        "crash",
        "scored",
        "syntax_error",
        "missing_output",
        "invalid_output",
        "timeout",
        "guard_rejected",
    ]
    assert graph["n0003"].op == "debug" and graph["n0003"].parents == ("n0001",)  # crash repaired first
    assert "boom in feature engineering" in graph["n0001"].failure
    assert "bad_header" in graph["n0005"].failure
    # The search uses the harness's score, never the printed one.
    good = graph["n0002"]
    assert good.printed_score == 0.99999 and good.score is not None and 0.8 < good.score < 0.99999
    assert agent.session.state.best_id == "n0002"
    best = run.best_dir
    assert (best / "solution.py").read_text() == GOOD
    assert json.loads((best / "best.json").read_text())["node"] == "n0002"
    # Every node has its files; the journal replays to the same state.
    for node in graph:
        d = run.node_dir(node.id)
        assert (d / "plan.md").exists() and (d / "solution.py").exists() and (d / "report.md").exists()
    state = replay(read_journal(run.path / "journal.jsonl"), "maximize")
    assert [(n.id, n.status, n.score) for n in state.graph] == [(n.id, n.status, n.score) for n in graph]
    assert state.best_id == "n0002"
    grade = grade_once(run, agent.session.state, agent.session.scorers.grade)
    assert grade["valid"] and grade["test_score"] > 0.8 and grade["node"] == "n0002"
    # Graded once: a second call returns the same record and writes nothing new.
    n_records = len(read_journal(run.path / "journal.jsonl"))
    assert grade_once(run, agent.session.state, agent.session.scorers.grade) == grade
    assert len(read_journal(run.path / "journal.jsonl")) == n_records


def test_prior_script_beats_nothing_on_every_metric_kind(tmp_path):
    for task_type, metric in (("binary", "roc_auc"), ("regression", "rmse"), ("binary", "accuracy")):
        root = make_task(tmp_path / f"{task_type}-{metric}", task_type=task_type, metric=metric)
        agent, run = _agent(root, tmp_path / metric, [], **{"budget.iterations": 2})
        agent.run_loop()
        assert all(n.status == "scored" for n in agent.session.state.graph), [
            n.failure for n in agent.session.state.graph
        ]
        run.close()


def test_time_budget_stops_the_run(small_task, tmp_path):
    agent, _run = _agent(
        small_task, tmp_path, [HANG, HANG, HANG], **{"budget.time_s": 8, "sandbox.script_timeout_s": 60}
    )
    started = time.monotonic()
    assert str(agent.run_loop()) == "budget: time"
    assert time.monotonic() - started < 20
    assert agent.session.state.graph["n0001"].status == "timeout"  # the script was cut to the remaining budget


def test_a_script_the_runs_end_cut_short_is_not_held_against_its_change(small_task, tmp_path):
    from mlguild.brains.recipes.choice import move_stats
    from mlguild.core.protocols import HistoryItem
    from mlguild.memory.experience import CUT_SHORT, FAILED

    # script_share 1: a script may take the whole budget, so the first one's limit is the time
    # left, shorter than its full limit: the run's end, not the script, stopped it.
    overrides = {"budget.time_s": 8, "budget.script_share": 1.0, "sandbox.script_timeout_s": 60}
    agent, _run = _agent(small_task, tmp_path / "cut", [HANG], **overrides)
    agent.run_loop()
    cut = agent.session.state.graph["n0001"]
    assert cut.status == "timeout" and cut.timing["cut_short"] is True
    [(_, record)] = agent.session.memory.local.store.recent(5)
    assert record.outcome == CUT_SHORT and "cut short" in record.change
    # A script that used up its own full limit did fail.
    agent, _run = _agent(small_task, tmp_path / "slow", [HANG], **{**overrides, "sandbox.script_timeout_s": 3})
    agent.run_loop()
    slow = agent.session.state.graph["n0001"]
    assert slow.status == "timeout" and "cut_short" not in slow.timing
    assert agent.session.memory.local.store.recent(5)[-1][1].outcome == FAILED
    # The recipe brain's move estimates leave a cut-short try out.
    parent = HistoryItem("n1", "draft", "scored", 0.8, {}, 10.0)
    tried = HistoryItem("n2", "improve", "timeout", None, {"parent": "n1", "move": "more_trees"}, 7.0, cut_short=True)
    assert "more_trees" not in move_stats((parent, tried), "maximize")


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
    cfg = load_config(None, ["budget.iterations=12", "search.num_drafts=2", "search.draft_every=0", "sandbox.script_timeout_s=30"])
    run = create_run(load_task(sys.argv[3]), cfg, path, run_id="r")
else:
    run = open_run(path)
agent = Agent(open_session(run, ScriptedBrain(), get_sandbox("local")))
agent.run_loop()
"""


def test_resume_after_sigkill_never_reruns_a_finished_node(small_task, tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, "new", str(runs), str(small_task)])
    journal = runs / "r" / "journal.jsonl"
    kill_after_finished(proc, journal, 3)
    before = read_journal(journal)
    finished_before = {r["id"] for r in before if r["type"] == "node_finished"}
    assert len(finished_before) >= 3
    subprocess.run([sys.executable, "-c", RUNNER, "resume", str(runs / "r")], check=True, timeout=120)
    records = read_journal(journal)
    finished = [r["id"] for r in records if r["type"] == "node_finished"]
    assert len(finished) == len(set(finished)) == 12  # each node finished exactly once
    assert set(finished_before) <= set(finished)
    new_starts = [r["node"]["id"] for r in records[len(before) :] if r["type"] == "node_started"]
    assert not set(new_starts) & finished_before  # no finished node was started again
    state = replay(records, "maximize")
    assert state.sessions == 2 and state.best_id is not None
    assert (runs / "r" / "best" / "submission.csv").exists()


HANGING_RUN = r"""
import sys
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.protocols import Proposal
from mlguild.rundir.folder import create_run, open_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task
mode, path = sys.argv[1], sys.argv[2]
if mode == "new":
    # The run's share caps a script at 5 s of its 1000 s; the sandbox's own limit is 600 s.
    sets = ["budget.iterations=1", "budget.time_s=1000", "budget.script_share=0.005", "sandbox.script_timeout_s=600"]
    run = create_run(load_task(sys.argv[3]), load_config(None, sets), path, run_id="r")
else:
    run = open_run(path)
brain = ScriptedBrain([Proposal("hang", "import time\ntime.sleep(600)\n", {})])
Agent(open_session(run, brain, get_sandbox("local"))).run_loop()
"""


def test_a_node_restarted_after_a_kill_gets_the_limit_the_uninterrupted_run_gave_it(small_task, tmp_path):
    runs = tmp_path / "runs"
    journal = runs / "r" / "journal.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", HANGING_RUN, "new", str(runs), str(small_task)])
    deadline = time.monotonic() + 60
    while not (journal.exists() and any(r["type"] == "node_started" for r in read_journal(journal))):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    subprocess.run([sys.executable, "-c", HANGING_RUN, "resume", str(runs / "r")], check=True, timeout=120)
    records = read_journal(journal)
    assert sum(r["type"] == "node_started" and r["node"].get("restart", False) for r in records) == 1
    [finished] = [r for r in records if r["type"] == "node_finished"]
    # Cut at the run's 5 s share of a script, as before the kill, not at the sandbox's 600 s.
    assert finished["status"] == "timeout" and finished["timing"]["exec_s"] < 60


def test_a_run_where_every_node_fails_the_same_way_stops(small_task, tmp_path):
    from mlguild.core.errors import BrainBroken

    agent, _run = _agent(small_task, tmp_path, [CRASH] * 40, **{"budget.iterations": 200, "search.max_debug_depth": 0})
    with pytest.raises(BrainBroken, match="same way"):
        agent.run_loop()
    assert len(agent.session.state.graph) == 25


def test_a_test_submission_with_a_label_the_task_never_had_is_invalid_during_the_search(tmp_path):
    root = make_task(tmp_path / "labels", metric="accuracy")
    labels = GOOD.replace(
        '"y": 1 / (1 + (-3 * frame["x0"]).map(__import__("math").exp))',
        '"y": (frame["x0"] > 0).astype(int).astype(str) if src == "holdout.csv" else "1.0"',
    )
    assert labels != GOOD
    agent, run = _agent(root, tmp_path, [labels], **{"budget.iterations": 1})
    agent.run_loop()
    node = agent.session.state.graph["n0001"]
    assert node.status == "invalid_output" and "unknown_label" in node.failure and "'1.0'" in node.failure
    run.close()


def test_the_loop_holds_no_lock_and_fits_on_one_screen():
    """What a node does to the graph under the session's lock is the session's (reserve,
    claim, release, skip), what its proposal needs is run/propose's: run/loop.py has no
    ``with ...lock`` block, and a node's way through it (``next_node`` and the methods it
    calls) stays under 80 lines."""
    import ast
    from pathlib import Path

    import mlguild.run.loop

    tree = ast.parse(Path(mlguild.run.loop.__file__).read_text())
    locks = [
        ast.unparse(item.context_expr)
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        for item in node.items
        if "lock" in ast.unparse(item.context_expr)
    ]
    assert locks == []
    (agent,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Agent"]
    sizes = {f.name: f.end_lineno - f.lineno + 1 for f in agent.body if isinstance(f, ast.FunctionDef)}
    assert sum(sizes[name] for name in ("next_node", "_choose", "_run")) < 80, sizes
