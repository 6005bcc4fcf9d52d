"""Nothing outlives a run, on both layers: after a timeout, and after the agent's SIGKILL.

Processes are found by a unique marker in their environment (forked children keep it),
so the check works inside a PID namespace, where the script's own pids mean nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

import mlguild
from mlguild.sandbox import ExecStatus, Limits, get_sandbox, safe_env
from mlguild.sandbox.bwrap import probe

from .arena import kill_all, survivors

SRC_DIR = Path(mlguild.__file__).resolve().parents[1]
LAYERS = [
    "local",
    pytest.param("bwrap", marks=pytest.mark.skipif(not probe()[0], reason=f"{probe()[1]}")),
]

# A tree that resists: the main process and two children ignore SIGTERM, one child left
# its session with a grandchild (a daemon the process group kill misses).
STUBBORN_TREE = """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for i in range(3):
    if os.fork() == 0:
        if i == 2:
            os.setsid()
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                open("grandchild", "w").close()
        while True:
            time.sleep(0.05)
while not os.path.exists("grandchild"):  # "ready" once the whole tree is up, however loaded the machine
    time.sleep(0.01)
open("ready", "w").close()
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def marker():
    m = f"lifemark{uuid.uuid4().hex[:12]}"
    yield m
    kill_all(m)


@pytest.mark.parametrize("layer", LAYERS)
def test_every_descendant_gone_soon_after_timeout(layer, tmp_path, marker):
    (tmp_path / "script.py").write_text(STUBBORN_TREE)
    limits = Limits(timeout_s=1.0, term_grace_s=1.0)
    t0 = time.monotonic()
    r = get_sandbox(layer).run(
        [sys.executable, "script.py"],
        tmp_path,
        safe_env(cwd=tmp_path, extra={"MLGUILD_TEST_MARKER": marker}),
        limits,
        tmp_path / "o.txt",
        tmp_path / "e.txt",
    )
    elapsed = time.monotonic() - t0
    assert (tmp_path / "ready").exists() and r.status is ExecStatus.TIMEOUT
    assert survivors(marker) == [], "processes outlived run()"
    # target: gone within 2 s of the deadline (grace 1 s + kill); generous for busy CI
    assert elapsed - limits.timeout_s < 2.0 + 1.5, f"{elapsed:.2f} s"
    assert r.descendants_killed >= 4


@pytest.mark.parametrize("layer", LAYERS)
def test_agent_killed_with_sigkill_leaves_no_script_running(layer, tmp_path, marker):
    (tmp_path / "script.py").write_text(STUBBORN_TREE)
    agent_code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from mlguild.sandbox import Limits, get_sandbox, safe_env
        d = Path({str(tmp_path)!r})
        env = safe_env(cwd=d, extra={{"MLGUILD_TEST_MARKER": {marker!r}}})
        get_sandbox({layer!r}).run([sys.executable, "script.py"], d, env, Limits(timeout_s=60),
                                   d / "o.txt", d / "e.txt")
    """)
    agent = subprocess.Popen([sys.executable, "-c", agent_code], env={**os.environ, "PYTHONPATH": str(SRC_DIR)})
    try:
        end = time.monotonic() + 15
        while not (tmp_path / "ready").exists():
            assert time.monotonic() < end and agent.poll() is None, "the script never started"
            time.sleep(0.02)
        time.sleep(0.1)  # let the grandchild start too
        script_procs = [p for p in survivors(marker) if p != agent.pid]
        assert len(script_procs) >= 4
        agent.kill()
        agent.wait()
        end = time.monotonic() + 2.0
        while (left := survivors(marker)) and time.monotonic() < end:
            time.sleep(0.02)
        assert left == [], f"the script outlived its agent: {left}"
    finally:
        agent.kill()
        agent.wait()


@pytest.mark.parametrize("layer", LAYERS)
def test_a_script_that_starts_nothing_never_has_descendants_killed(layer, tmp_path):
    # Runs that end before the first sample of the tree: bwrap and its namespace init,
    # which can outlive bwrap by a moment, are the sandbox's own processes, not the script's.
    sandbox = get_sandbox(layer)
    counts = [
        sandbox.run(
            [sys.executable, "-c", "pass"],
            tmp_path,
            safe_env(cwd=tmp_path),
            Limits(timeout_s=20),
            tmp_path / "o.txt",
            tmp_path / "e.txt",
        ).descendants_killed
        for _ in range(20)
    ]
    assert counts == [0] * 20


LEAVES_TWO = """
import os, time
if os.fork() == 0:  # a daemon: setsid + double fork, out of every group and session
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
if os.fork() == 0:  # a plain child
    time.sleep(1000)
time.sleep(0.05)  # both forked, the daemon's parent gone
"""


@pytest.mark.parametrize("layer", LAYERS)
def test_descendants_killed_counts_exactly_what_the_script_left(layer, tmp_path, marker):
    # In the namespace layer the sweep, not the namespace's end, kills the leftovers, so
    # it can count them (bwrap runs without --die-with-parent: see sandbox/namespace.py, namespace_args).
    (tmp_path / "script.py").write_text(LEAVES_TWO)
    sandbox = get_sandbox(layer)
    env = safe_env(cwd=tmp_path, extra={"MLGUILD_TEST_MARKER": marker})
    counts = []
    for _ in range(10):
        r = sandbox.run(
            [sys.executable, "script.py"], tmp_path, env, Limits(timeout_s=20), tmp_path / "o.txt", tmp_path / "e.txt"
        )
        assert r.status is ExecStatus.OK and survivors(marker) == [], r.reason
        counts.append(r.descendants_killed)
    assert counts == [2] * 10


@pytest.mark.skipif(not probe()[0], reason=f"{probe()[1]}")
def test_supervisor_killed_takes_the_whole_namespace_down(tmp_path, marker):
    # bwrap's init outlives bwrap (no --die-with-parent), so when the supervisor itself is
    # SIGKILLed (bwrap dies of its PDEATHSIG) the agent kills the init it reported, and with
    # it the namespace: the setsid daemon too.
    (tmp_path / "script.py").write_text(STUBBORN_TREE)
    sandbox = get_sandbox("bwrap", prestart=False)  # its only child is this run's supervisor
    done: dict = {}
    env = safe_env(cwd=tmp_path, extra={"MLGUILD_TEST_MARKER": marker})
    runner = threading.Thread(
        target=lambda: done.setdefault(
            "r",
            sandbox.run(
                [sys.executable, "script.py"],
                tmp_path,
                env,
                Limits(timeout_s=60),
                tmp_path / "o.txt",
                tmp_path / "e.txt",
            ),
        )
    )
    runner.start()
    try:
        end = time.monotonic() + 15
        while not (tmp_path / "ready").exists():
            assert time.monotonic() < end and runner.is_alive(), "the script never started"
            time.sleep(0.02)
        time.sleep(0.3)  # the grandchild started, the supervisor reported the init
        assert len(survivors(marker)) >= 4
        # ours, and busy: other sandboxes of this process may keep one started ahead, idle
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        (supervisor,) = [
            p
            for p in pids
            if _ppid(p) == os.getpid()
            and b"supervisor" in _read(f"/proc/{p}/cmdline")
            and any(_ppid(c) == p for c in pids)
        ]
        os.kill(supervisor, signal.SIGKILL)
        runner.join(10)
        assert not runner.is_alive()
        assert done["r"].status is ExecStatus.SANDBOX_ERROR
        end = time.monotonic() + 2.0
        while (left := survivors(marker)) and time.monotonic() < end:
            time.sleep(0.02)
        assert left == [], f"the script outlived its supervisor: {left}"
    finally:
        runner.join(30)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def _nspid(pid: int) -> list[int]:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith(b"NSpid:"):
            return [int(x) for x in line.split()[1:]]
    return []


def _ppid(pid: int) -> int:
    stat = _read(f"/proc/{pid}/stat")
    return int(stat.rsplit(b")", 1)[1].split()[1]) if stat else 0


@pytest.mark.skipif(not probe()[0], reason=f"{probe()[1]}")
def test_agent_and_supervisor_both_killed_leave_the_namespace_to_its_init(tmp_path, marker):
    # What bwrap.py says it does not cover: with both gone at once nobody sweeps, and the
    # namespace init, no longer tied to bwrap, keeps the script running. Killing that init
    # (the pid the supervisor reports) still ends everything in the namespace.
    (tmp_path / "script.py").write_text(STUBBORN_TREE)
    agent_code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from mlguild.sandbox import Limits, get_sandbox, safe_env
        d = Path({str(tmp_path)!r})
        env = safe_env(cwd=d, extra={{"MLGUILD_TEST_MARKER": {marker!r}}})
        get_sandbox("bwrap", prestart=False).run([sys.executable, "script.py"], d, env,
                                                 Limits(timeout_s=60), d / "o.txt", d / "e.txt")
    """)
    agent = subprocess.Popen([sys.executable, "-c", agent_code], env={**os.environ, "PYTHONPATH": str(SRC_DIR)})
    try:
        end = time.monotonic() + 15
        while not (tmp_path / "ready").exists():
            assert time.monotonic() < end and agent.poll() is None, "the script never started"
            time.sleep(0.02)
        time.sleep(0.2)
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        (supervisor,) = [p for p in pids if _ppid(p) == agent.pid]
        for pid in (agent.pid, supervisor):
            os.kill(pid, signal.SIGKILL)
        agent.wait()
        time.sleep(0.5)
        left = survivors(marker)
        assert len(left) >= 4, "the namespace did not outlive its supervisor: update bwrap.py"
        # bwrap's init (its command line holds the marker too): pid 1 in the namespace
        (init,) = [p for p in left if _nspid(p)[1:] == [1]]
        os.kill(init, signal.SIGKILL)
        end = time.monotonic() + 2.0
        while (left := survivors(marker)) and time.monotonic() < end:
            time.sleep(0.02)
        assert left == [], f"killing the namespace init left {left}"
    finally:
        agent.kill()
        agent.wait()


# Never beside one another: these tests kill sandboxed processes, and the lifecycle test of a
# namespace left to its init lost that namespace to a kill from a test run beside it.
pytestmark = pytest.mark.xdist_group("process-kills")
