"""Several workers on one run (mlguild.run.workers): nodes run at once, each script pinned to its
own CPUs, the workers read each other's reports, and a kill loses no finished node."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import SLOW_REPLY, llm_agent, make_task, run_while_killing_one, slow_replies

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.llm import ScriptedLLM
from mlguild.pools import Pools
from mlguild.run.workers import cpu_sets
from mlguild.sandbox.procfs import proc_table


def test_cpu_shares_are_disjoint_and_cover_the_cpus():
    assert cpu_sets(2, [0, 1, 2, 3, 4]) == [(0, 1, 2), (3, 4)]
    assert cpu_sets(3, [0, 1]) == [(0,), (1,), (0,)]
    assert cpu_sets(1, [4, 2]) == [(2, 4)]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin two workers apart")
def test_two_workers_run_at_once_pinned_apart_and_read_each_others_reports(tmp_path):
    prompts: list[tuple[str, str]] = []  # (worker thread, the request's last turn)

    def reply(messages):
        prompts.append((threading.current_thread().name, messages[-1].content))
        return varied.pop(0)

    varied = slow_replies()
    llm = ScriptedLLM(default=None, replies=[reply] * 50)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 6})
    stop = agent.run_loop(workers=2)
    assert stop.finished
    nodes = list(agent.session.state.graph)
    assert len(nodes) == 6 and all(n.ok for n in nodes), [(n.id, n.status, n.failure) for n in nodes]

    # The scripts overlapped in time, each on its own CPU with one thread.
    started = {r["node"]["id"]: r["ts"] for r in run.journal.records if r["type"] == "node_started"}
    finished = {r["id"]: r["ts"] for r in run.journal.records if r["type"] == "node_finished"}
    spans = sorted((started[n.id], finished[n.id]) for n in nodes)
    assert any(b0 < a1 for (_, a1), (b0, _) in itertools.pairwise(spans)), spans
    pinned = {(run.node_dir(n.id) / "stdout.txt").read_text().strip() for n in nodes}
    assert pinned <= {"cpus [0] threads 1", "cpus [1] threads 1"} and len(pinned) == 2, pinned

    # Both workers worked, and a prompt of one carried a report of the other's node.
    pools = Pools.open(run.path)
    by_worker = {r.node: r.worker for r in pools.reports.all()}
    assert set(by_worker.values()) == {"worker-1", "worker-2"}
    crossed = [
        (thread, node)
        for thread, prompt in prompts
        for node, worker in by_worker.items()
        if f"- {node} (" in prompt and not thread.endswith(worker)
    ]
    assert crossed, "no worker's prompt showed the other worker's report"


def _cli(*args, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "mlguild", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        **kw,
    )


def _records(journal):
    return [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_a_kill_9_mid_node_loses_no_finished_node_and_resume_goes_on(tmp_path):
    task = make_task(tmp_path / "task", n=300)
    runs = tmp_path / "runs"
    common = ["--runs-dir", str(runs), "--workers", "2"]
    proc = _cli("run", str(task), "--brain", "recipes", "--iterations", "5", "--run-id", "r", *common)
    journal = runs / "r" / "journal.jsonl"
    try:
        end = time.monotonic() + 240
        while True:  # two nodes finished, and another one running
            assert time.monotonic() < end and proc.poll() is None, "the run ended before the kill"
            records = _records(journal) if journal.exists() else []
            done = {r["id"] for r in records if r["type"] == "node_finished"}
            running = {r["node"]["id"] for r in records if r["type"] == "node_started"} - done
            if len(done) >= 2 and running:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
        proc.communicate()
    before = {r["id"]: r for r in _records(journal) if r["type"] == "node_finished"}
    resumed = _cli("resume", str(runs / "r"), "--workers", "2")
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    after = _records(journal)
    finished = {r["id"]: r for r in after if r["type"] == "node_finished"}
    for node_id, record in before.items():  # every node finished before the kill is kept as it was
        assert finished[node_id]["status"] == record["status"] and finished[node_id].get("score") == record.get("score")
        starts = [r for r in after if r["type"] == "node_started" and r["node"]["id"] == node_id]
        assert len(starts) == 1, f"{node_id} ran again"
    searched = [r for r in after if r["type"] == "node_started" and not r["node"].get("restart")]
    assert len({r["node"]["id"] for r in searched if r["node"]["op"] != "refit"}) >= 5
    assert (runs / "r" / "final" / "submission.csv").is_file()


@pytest.mark.slow
def test_ctrl_c_stops_every_worker_and_leaves_a_resumable_run(tmp_path):
    task = make_task(tmp_path / "task", n=300)
    runs = tmp_path / "runs"
    proc = _cli(
        "run", str(task), "--brain", "recipes", "--time", "5m", "--run-id", "r", "--runs-dir", str(runs), "-w", "2"
    )
    journal = runs / "r" / "journal.jsonl"
    try:
        end = time.monotonic() + 240
        while not (journal.exists() and sum(r["type"] == "node_started" for r in _records(journal)) >= 2):
            assert time.monotonic() < end and proc.poll() is None, "no two nodes started"
            time.sleep(0.05)
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, out
    assert time.monotonic() - began < 30  # the running scripts were stopped, not waited out
    assert "stopped: interrupted by user" in out and "mlguild resume" in out
    records = _records(journal)
    assert records[-1]["type"] == "session_ended" and records[-1]["reason"] == "interrupted by user"


def _script_pids() -> list[int]:
    """Processes running a node's solution.py that descend from this test's process."""
    table = proc_table()
    found = []
    for pid in table:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        ancestor = pid
        while ancestor in table and ancestor not in (0, 1, os.getpid()):
            ancestor = table[ancestor][0]
        if b"solution.py" in argv and ancestor == os.getpid():
            found.append(pid)
    return found


def test_a_script_killed_under_one_worker_fails_its_node_only(tmp_path):
    llm = ScriptedLLM(slow_replies(), default=None)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 6})
    stop, killed = run_while_killing_one(agent, run, _script_pids)
    assert stop.finished and killed
    nodes = list(agent.session.state.graph)
    failed = [n for n in nodes if not n.ok]
    assert len(nodes) == 6 and len(failed) == 1, [(n.id, n.status, n.failure) for n in nodes]
    assert "SIGKILL" in (failed[0].failure or "") or "signal 9" in (failed[0].failure or ""), failed[0].failure


def _executed(run) -> dict[str, str]:
    """The code hash of each node whose script ran (a duplicate is journaled, never run)."""
    ran = {r["id"] for r in run.journal.records if r["type"] == "node_finished" and r.get("status") != "duplicate"}
    return {
        r["node"]["id"]: r["node"]["code_sha256"]
        for r in run.journal.records
        if r["type"] == "node_started" and r["node"]["id"] in ran
    }


def test_two_workers_never_run_the_same_code_twice(tmp_path):
    """A brain that answers every request with one script (as a recipe brain does for two
    workers choosing from the same graph): it runs once; each repeat is asked again, twice,
    then recorded as a duplicate without running."""
    from mlguild.core.vocabulary import FailureKind

    llm = ScriptedLLM(default=SLOW_REPLY)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 3})
    assert agent.run_loop(workers=2).finished
    nodes = list(agent.session.state.graph)
    assert len(nodes) == 3
    ran = _executed(run)
    assert len(ran) == 1 and len(set(ran.values())) == 1
    (first,) = ran
    duplicates = [n for n in nodes if n.status == FailureKind.DUPLICATE]
    assert len(duplicates) == 2
    assert [n.failure for n in duplicates] == [f"its code is {first}'s, already run or running: not run again"] * 2
    assert not (run.node_dir(duplicates[0].id) / "stdout.txt").exists()  # never executed


def test_a_worker_whose_proposal_repeats_another_asks_the_brain_again(tmp_path):
    """The first two requests get one script (two workers proposing at once), later ones new
    scripts: the repeat is asked again and runs the new one; every node runs its own code."""
    varied = slow_replies()
    replies = [varied[0], varied[0], *varied[1:]]
    llm = ScriptedLLM(default=None, replies=[lambda messages: replies.pop(0)] * 50)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 4})
    assert agent.run_loop(workers=2).finished
    nodes = list(agent.session.state.graph)
    assert len(nodes) == 4 and all(n.ok for n in nodes), [(n.id, n.status, n.failure) for n in nodes]
    ran = _executed(run)
    assert len(ran) == 4 and len(set(ran.values())) == 4


def test_a_run_of_two_workers_replays_to_the_graph_it_ran(tmp_path):
    """The journal is the run's state: replayed, a run of two workers (ideas offered to the
    nodes in flight together, a repeat of another worker's code asked again) gives back its
    live graph, every field of every node, and the same best node."""
    from mlguild.pools.ideas import COMMUNITY, Source
    from mlguild.rundir.replay import replay

    varied = slow_replies()
    replies = [varied[0], varied[0], *varied[1:]]
    llm = ScriptedLLM(default=None, replies=[lambda messages: replies.pop(0)] * 50)
    brain = LLMBrain(llm, LLMBrainOptions(diff_mode=False))
    agent, run = llm_agent(tmp_path, brain, **{"budget.iterations": 4, "pools.ideas_shown": 2})
    # More ideas than the nodes in flight hold between them (2 workers x 2 shown), so that every
    # node is offered some however the workers' timing falls.
    ideas = (
        "log-transform the skewed columns",
        "tune lightgbm leaves",
        "blend ridge and knn",
        "add ratios",
        "bag seeds",
    )
    for k, text in enumerate(ideas):
        agent.session.pools.ideas.add(text, COMMUNITY, Source(f"k{k}", kind="post", votes=10))
    assert agent.run_loop(workers=2).finished
    live = agent.session.state
    assert len(live.graph) == 4 and all(n.ok for n in live.graph), [(n.id, n.status, n.failure) for n in live.graph]
    assert all(n.meta.get("ideas_offered") for n in live.graph)
    state = replay(run.journal.records, "maximize")
    assert [n.to_dict() for n in state.graph] == [json.loads(json.dumps(n.to_dict())) for n in live.graph]
    assert state.best_id == live.best_id is not None
