"""Nothing outlives a run, on both layers: after a timeout, and after the agent's SIGKILL.

Processes are found by a unique marker in their environment (forked children keep it),
so the check works inside a PID namespace, where the script's own pids mean nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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
        while True:
            time.sleep(0.05)
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
        [sys.executable, "script.py"], tmp_path,
        safe_env(cwd=tmp_path, extra={"MLGUILD_TEST_MARKER": marker}), limits,
        tmp_path / "o.txt", tmp_path / "e.txt",
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
    agent = subprocess.Popen([sys.executable, "-c", agent_code],
                             env={**os.environ, "PYTHONPATH": str(SRC_DIR)})
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
