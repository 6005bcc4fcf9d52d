"""A two-node Ray cluster on this machine, as separate processes, for the tests of Ray workers.

The head (``ray start --head``, 1 CPU, on 127.0.0.1) and a worker node (``ray start --address``,
1 CPU and the resource ``w2``, on 127.0.0.2) each have their own ``--temp-dir``, which is where
each one's scratch folder is (mlguild.run.ray_ship). Every port is chosen free, the dashboard
is off. Each ``ray start`` runs with ``--block`` in a session of its own, so a node is every
process of that session, and every process carries the node's name in its environment
(``MLGUILD_TEST_RAY_NODE``): ``kill_node`` kills exactly those, which is how the tests stop a
node (``ray stop`` would not do: it stops every Ray process on the machine, other clusters too).

Both nodes and the driver use Ray's token authentication (``RAY_AUTH_MODE=token``, Ray's own
``~/.ray/auth_token``, made when missing): Ray turns it on for a head when that file exists,
and a local ``ray.init`` makes the file, so a mode left to chance differs between runs.

No shared disk: every Python process of both nodes starts with an audit hook (a
``sitecustomize`` on their PYTHONPATH) that refuses to open, list, enter or run in any path
under the driver's folder (``forbidden``), and writes what it refused to ``refused_log``. The
runs' folders are under it, so a Ray worker that reached for one would fail and be logged.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlguild.sandbox.procfs import proc_table

_MARK = "MLGUILD_TEST_RAY_NODE"
_START_S = 120  # a node that has not started by then fails the fixture (~13 s here)

# Installed in every Python process of both nodes (not in the driver: tests/run/ray_driver.py).
SITECUSTOMIZE = """
import os, sys
_FORBIDDEN = os.environ.get("MLGUILD_TEST_FORBIDDEN")
_LOG = os.environ.get("MLGUILD_TEST_REFUSED_LOG")
_EVENTS = {"open": 0, "os.listdir": 0, "os.scandir": 0, "os.chdir": 0, "os.mkdir": 0, "subprocess.Popen": 2}

def _refuse(event, args):
    where = _EVENTS.get(event)
    if where is None or len(args) <= where:
        return
    path = args[where]
    if hasattr(path, "__fspath__"):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if isinstance(path, str) and (path == _FORBIDDEN or path.startswith(_FORBIDDEN + "/")):
        with open(_LOG, "a") as f:  # noqa: the log is outside the forbidden folder
            f.write(f"{os.getpid()} {event} {path}\\n")
        raise PermissionError(f"no shared disk in this test: {event} {path}")

if _FORBIDDEN and _LOG:
    sys.addaudithook(_refuse)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    name: str
    temp_dir: Path
    process: subprocess.Popen
    log: Path
    node_id: str = ""

    @property
    def mark(self) -> str:
        """What every process of this node has in its environment."""
        return f"{_MARK}={self.temp_dir.parent}:{self.name}"


@dataclass
class Cluster:
    address: str
    forbidden: Path  # the driver's folder: runs go under it, no Ray process may touch it
    refused_log: Path
    nodes: dict[str, Node] = field(default_factory=dict)

    def refused(self) -> list[str]:
        return self.refused_log.read_text().splitlines() if self.refused_log.exists() else []


def start_cluster(forbidden: Path) -> Cluster:
    """Start the head and the worker node (see the module's docstring); the caller connects."""
    root = Path(tempfile.mkdtemp(prefix="mlray-"))  # short: Ray's socket paths must fit 107 bytes
    site = root / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    cluster = Cluster(f"127.0.0.1:{free_port()}", forbidden, root / "refused.log")
    ray = str(Path(sys.executable).parent / "ray")
    subprocess.run([ray, "get-auth-token", "--generate"], check=True, capture_output=True, timeout=60)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "MLGUILD_TEST_FORBIDDEN": str(forbidden),
        "MLGUILD_TEST_REFUSED_LOG": str(cluster.refused_log),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_TMPDIR": str(root),  # its address file too: a local Ray's "auto" elsewhere never finds this cluster
    }
    env.pop("RAY_ADDRESS", None)
    # A lost node is known within ~10 s (the default is ~15 s): the kill test waits less. Not
    # sooner: on a busy machine (CI's workers on two cores) a live node's heartbeats can lag a
    # second or two, and a node declared dead while alive fails nodes that were never killed.
    health = {"health_check_period_ms": 1000, "health_check_failure_threshold": 10, "health_check_timeout_ms": 1000}
    common = ["--num-cpus", "1", "--object-store-memory", str(100 * 2**20), "--disable-usage-stats", "--block"]
    ports = lambda: ["--dashboard-agent-listen-port", str(free_port()), "--metrics-export-port", str(free_port())]
    head = [
        "--head", "--port", cluster.address.rsplit(":", 1)[1], "--node-ip-address", "127.0.0.1",
        "--include-dashboard", "false", "--dashboard-port", str(free_port()), "--system-config", json.dumps(health),
    ]  # fmt: skip
    worker = ["--address", cluster.address, "--node-ip-address", "127.0.0.2", "--resources", json.dumps({"w2": 1})]
    try:
        for name, args in (("head", head), ("w2", worker)):
            cluster.nodes[name] = _start_node(name, root, [*args, *common, *ports()], env)
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def _start_node(name: str, root: Path, args: list[str], env: dict[str, str]) -> Node:
    temp_dir, log = root / name, root / f"{name}.log"
    ray = Path(sys.executable).parent / "ray"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(ray), "start", "--temp-dir", str(temp_dir), *args],
            env={**env, _MARK: f"{root}:{name}"},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    node = Node(name, temp_dir, process, log)
    end = time.monotonic() + _START_S
    while "Ray runtime started" not in log.read_text():
        if process.poll() is not None or time.monotonic() > end:
            kill_node(node)
            raise RuntimeError(f"ray start for {name} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return node


def node_pids(node: Node) -> list[int]:
    """Every live process of ``node``."""
    return marked_pids(node.mark)


def kill_node(node: Node) -> None:
    """SIGKILL every process of ``node`` and reap its ``ray start``. Its session is killed by
    the pid of that process only while it is not reaped: once it is, the pid (and a process
    group of that number) may belong to any other process (CI's other tests' sandboxes)."""
    kill_marked(node.process.pid if node.process.poll() is None else None, node.mark)
    node.process.wait(timeout=10)


def marked_pids(mark: str) -> list[int]:
    """Every live process whose environment has ``mark`` (a node's ``Node.mark``)."""
    found = []
    for pid in proc_table():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark.encode() in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found


def kill_marked(pgid: int | None, mark: str) -> None:
    """SIGKILL a node's processes from any process: its session ``pgid`` (None: it is gone),
    then any that left it. ``pgid`` must be the pid of the node's ``ray start`` while that
    process is not yet reaped, so that no other process can have taken the number."""
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for _ in range(3):
        pids = marked_pids(mark)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def stop_cluster(cluster: Cluster) -> None:
    """Stop both nodes (the worker node first) and remove their temp dirs."""
    for node in reversed(list(cluster.nodes.values())):
        kill_node(node)
    shutil.rmtree(cluster.refused_log.parent, ignore_errors=True)
