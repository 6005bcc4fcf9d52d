"""The Ray tests' driver: each Ray run of the tests in a Python process of its own.

A Ray driver's process is Ray's to end: when its raylet or its connection to the cluster is
lost, Ray's core worker exits the process (on CI's busy cores it once took a pytest-xdist
worker with it, and that ended the whole suite). So the tests never call ``ray.init``
themselves: ``drive(scenario, **args)`` runs one scenario below in a fresh interpreter, with
a clean Ray configuration (the cluster's token authentication only where the scenario joins
the test cluster), and returns what the scenario returned (JSON). A driver that dies, hangs
or fails is a test failure that shows the driver's own last output.

    python tests/run/ray_driver.py SCENARIO JSON_ARGS
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_RESULT = "RAY-DRIVER-RESULT "
_TIMEOUT_S = 280  # under pytest's 300 s per test: the driver's output is shown, not a bare timeout


def drive(scenario: str, cluster_auth: bool = False, **args) -> dict:
    """Run ``scenario`` in a new driver process; what it returned. ``cluster_auth``: join with
    the test cluster's token authentication (tests/run/ray_cluster.py)."""
    import pytest

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    if cluster_auth:
        env["RAY_AUTH_MODE"] = "token"
    else:  # a local instance of its own: Ray's "auto" finds no other (short: Ray's socket paths must fit 107 bytes)
        env["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="mlray-")
    argv = [sys.executable, str(Path(__file__)), scenario, json.dumps(args)]
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = process.communicate(timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the driver and the local Ray it started
        out, _ = process.communicate()
        pytest.fail(f"the Ray driver ({scenario}) ran past {_TIMEOUT_S} s; its last output:\n{out[-4000:]}")
    finally:
        if "RAY_TMPDIR" in env:
            shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    results = [line for line in out.splitlines() if line.startswith(_RESULT)]
    if process.returncode != 0 or not results:
        pytest.fail(
            f"the Ray driver ({scenario}) ended with exit {process.returncode}; its last output:\n{out[-4000:]}"
        )
    return json.loads(results[-1].removeprefix(_RESULT))


# --- in the driver's process -------------------------------------------------------------


def _agent(folder: Path, replies: list[str], iterations: int):
    """An agent of two workers whose scripts run on Ray (tests/conftest.py's llm_agent)."""
    from conftest import llm_agent

    from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
    from mlguild.llm import ScriptedLLM
    from mlguild.run.ray_workers import RaySandbox

    brain = LLMBrain(ScriptedLLM(replies, default=None), LLMBrainOptions(diff_mode=False))
    agent, run = llm_agent(folder, brain, **{"budget.iterations": iterations})
    agent.session.executor.sandbox = RaySandbox(agent.session.executor.sandbox)
    return agent, run


def where_replies(sleep_s: float, n: int = 20) -> list[str]:
    """Distinct scripts (two workers never run one script twice) that say where they ran."""
    from conftest import GOOD

    where = f'import time\nprint("where", os.getcwd(), os.environ["MLGUILD_DATA"])\ntime.sleep({sleep_s})'
    code = GOOD.replace('print("cv_score: 0.99999")', where)
    return [f"Plan: logistic curve on x0.\n```python\n# variant {i}\n{code}```\n" for i in range(n)]


def _finished(run) -> list[dict]:
    return [r for r in run.journal.records if r["type"] == "node_finished"]


def _report(agent, run, stop) -> dict:
    """What the tests check of a run: its nodes, where each script ran, the run's folders."""
    return {
        "finished": stop.finished,
        "nodes": [
            {"id": n.id, "ok": n.ok, "status": str(n.status), "failure": n.failure or ""}
            for n in agent.session.state.graph
        ],
        "runs_on": [{"id": r["id"], **(r.get("exec") or {})} for r in _finished(run)],
        "run": str(run.path),
        "node_dirs": {n.id: str(run.node_dir(n.id)) for n in agent.session.state.graph},
        "train": str(run.workspace.data_dir / run.spec.train_file),
        "inner_layer": agent.session.executor.sandbox.inner.layer,
    }


def _own_ray_task_pids() -> list[int]:
    """Ray worker processes of this driver's own local instance (its raylet is a child of this
    process) busy with a script: never another Ray's on the machine."""
    from mlguild.sandbox.procfs import descendants, proc_table

    return _ray_task_pids(lambda: descendants(os.getpid(), proc_table()))


def _ray_task_pids(among) -> list[int]:
    """Of the processes ``among()`` names, the Ray worker processes busy with a script (Ray
    titles them after the task)."""
    found = []
    for pid in among():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"ray::_run_script"):
                    found.append(pid)
        except OSError:
            continue
    return found


def local_kill(folder: str, iterations: int) -> dict:
    """A local Ray instance; a Ray worker killed (-9) mid-script, after a node has finished."""
    import ray
    from conftest import run_while_killing_one, slow_replies

    from mlguild.run.ray_workers import connect

    said = connect("auto")
    try:
        agent, run = _agent(Path(folder), slow_replies(), iterations)
        stop, killed_at = run_while_killing_one(agent, run, _own_ray_task_pids)
        return {**_report(agent, run, stop), "connected": said, "killed_at": killed_at}
    finally:
        ray.shutdown()


def _cluster_nodes() -> dict[str, str]:
    """The test cluster's nodes by name (tests/run/ray_cluster.py: the worker node has ``w2``)."""
    import ray

    end = time.monotonic() + 60
    while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.monotonic() < end:
        time.sleep(0.2)
    return {("w2" if "w2" in n["Resources"] else "head"): n["NodeID"] for n in ray.nodes() if n["Alive"]}


def refusal(address: str, probe: str) -> dict:
    """A Ray task on the worker node reads ``probe``, a file in the driver's folder."""
    import ray

    from mlguild.run.ray_workers import connect

    connect(address)
    try:

        @ray.remote(num_cpus=1, resources={"w2": 1})
        def read(path: str) -> str:
            try:
                return open(path).read()
            except PermissionError as exc:
                return f"refused: {exc}"

        return {"read": ray.get(read.remote(probe)), "nodes": _cluster_nodes()}
    finally:
        ray.shutdown()


def search_on_worker_node(address: str, folder: str, iterations: int) -> dict:
    """A search of two workers while an actor holds the head's one CPU: its scripts can only go
    to the worker node (a script asks for one CPU)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from mlguild.run.ray_workers import connect

    connect(address)
    try:
        nodes = _cluster_nodes()

        @ray.remote(num_cpus=1)
        class Holder:
            def ready(self) -> bool:
                return True

        head = NodeAffinitySchedulingStrategy(nodes["head"], soft=False)
        holder = Holder.options(scheduling_strategy=head).remote()  # type: ignore[attr-defined]
        ray.get(holder.ready.remote(), timeout=120)  # the head's CPU is held from here on
        try:
            agent, run = _agent(Path(folder), where_replies(0.5), iterations)
            stop = agent.run_loop(workers=2)
        finally:
            ray.kill(holder)
        return {**_report(agent, run, stop), "cluster": nodes}
    finally:
        ray.shutdown()


def kill_worker_node(address: str, folder: str, iterations: int, pgid: int, mark: str) -> dict:
    """A search of two workers on both nodes; the worker node is killed (every process of it:
    ``pgid``, its session, and those whose environment has ``mark``) once it runs a script."""
    import ray
    from conftest import run_while_killing_one
    from ray_cluster import kill_marked, marked_pids

    from mlguild.run.ray_workers import connect

    connect(address)
    try:
        nodes = _cluster_nodes()
        agent, run = _agent(Path(folder), where_replies(1.0), iterations)
        on_w2 = lambda: _ray_task_pids(lambda: marked_pids(mark))
        kill_w2 = lambda _pid: kill_marked(pgid, mark)
        stop, killed_at = run_while_killing_one(agent, run, on_w2, kill=kill_w2, after_a_node=False)
        return {**_report(agent, run, stop), "cluster": nodes, "killed_at": killed_at, "w2_left": marked_pids(mark)}
    finally:
        ray.shutdown()


SCENARIOS = {f.__name__: f for f in (local_kill, refusal, search_on_worker_node, kill_worker_node)}

if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(HERE.parent)]  # tests/run (the cluster's helpers) and tests (conftest)
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    result = SCENARIOS[scenario](**args)
    print(_RESULT + json.dumps(result), flush=True)
