"""Every attack in attacks.py against both layers; a test FAILS IF THE ATTACK SUCCEEDS.

Whatever the attack aims at, every channel is checked after every run: secrets in its
output or files, changed protected files, the victim "agent" dead, bytes at a loopback
listener, processes left running, and the attack's own "PWNED" report. Where a layer
documents that it does not cover an attack, the case is a strict xfail: it must still
escape, so a layer that starts containing it is noticed and its docstring updated.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from mlguild.sandbox import BwrapSandbox, ExecStatus, Limits, LocalSandbox, safe_env
from mlguild.sandbox.bwrap import probe

from .arena import Arena, alive, kill_all, mountpoints_under, survivors
from .attacks import ATTACKS, NC, PRELUDE, PTR, ROOT, UID, Attack

IS_ROOT = os.geteuid() == 0
BWRAP_OK, BWRAP_WHY = probe()
NOBODY = (65534, 65534)
LOCAL_DROPS = IS_ROOT and LocalSandbox().drop_problem(*NOBODY) == ""
BWRAP_DROPS = IS_ROOT and BWRAP_OK and BwrapSandbox().drop_problem(*NOBODY) == ""
# Where pid 1 is not dumpable (a VM's or container runtime's init), /proc/1/root is closed
# even to root, so that path is contained on such a machine whatever the layer does.
PROC1_ROOT_OPEN = os.access("/proc/1/root/", os.R_OK)
CAP_SYS_PTRACE = 19


def holds_sys_ptrace(pid: int) -> bool:
    """Whether process ``pid`` holds CAP_SYS_PTRACE (in its permitted set)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("CapPrm:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError):
        pass
    return False


try:  # Yama: 1 limits PTRACE_ATTACH to descendants (unless CAP_SYS_PTRACE), 3 forbids it
    PTRACE_SCOPE = int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
except (OSError, ValueError):
    PTRACE_SCOPE = 0


def contained_here(attack: Attack, layer: str) -> bool:
    """Whether ``layer`` promises to contain ``attack`` on this machine, as root or not."""
    promise = attack.local if layer == "local" else attack.bwrap
    drops = LOCAL_DROPS if layer == "local" else BWRAP_DROPS
    if attack.name == "sealed_via_proc_1_root" and not PROC1_ROOT_OPEN:
        return True
    if attack.name == "ptrace_the_agent" and (PTRACE_SCOPE == 3 or (PTRACE_SCOPE and not IS_ROOT)):
        return True
    if promise == NC:
        return False
    if promise == UID:
        return IS_ROOT and drops
    if promise == ROOT:  # the script is root only in the local layer without a drop
        return layer == "bwrap" or not IS_ROOT or drops
    if promise == PTR:  # the target: pid 1, or the "agent" (with this test process's caps)
        target = 1 if attack.name == "sealed_via_proc_1_root" else os.getpid()
        other_uid = drops or (target == 1 and not IS_ROOT)
        return other_uid or (IS_ROOT and holds_sys_ptrace(target))
    return True


def cases():
    for attack in ATTACKS:
        for layer in ("local", "bwrap"):
            marks = []
            if layer == "bwrap" and not BWRAP_OK:
                marks.append(pytest.mark.skip(reason=f"namespace layer unusable: {BWRAP_WHY}"))
            elif not contained_here(attack, layer):
                promise = attack.local if layer == "local" else attack.bwrap
                marks.append(pytest.mark.xfail(strict=True, reason=f"{layer} layer, {promise} (see its docstring)"))
            yield pytest.param(attack, layer, id=f"{layer}-{attack.name}", marks=marks)


@pytest.fixture
def arena(monkeypatch):
    # Not tmp_path: pytest's base temp dir is mode 0700, which alone would forbid the
    # always-on layer's uid drop; the run layout must be reachable as on a real machine.
    root = Path(tempfile.mkdtemp(prefix="mlguild-adv-"))
    root.chmod(0o755)
    a = Arena(root)
    monkeypatch.setenv("OPENAI_API_KEY", a.canary)  # the agent's own secret
    try:
        yield a
    finally:
        a.close()
        shutil.rmtree(root, ignore_errors=True)


def births(a: Arena) -> int:
    path = a.node / "bomb.births"
    return path.stat().st_size if path.exists() else 0


def knock(a: Arena, got_in: list) -> None:
    """For listening_backdoor: try to reach the port the script opened, from the host."""
    end = time.monotonic() + 4
    port_file = a.node / "listen.port"
    while time.monotonic() < end and not port_file.exists():
        time.sleep(0.02)
    time.sleep(0.05)
    try:
        port = int(port_file.read_text())
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"knock")
            got_in.append(port)
    except (OSError, ValueError):
        pass


SPECIFIC = {
    "fork_bomb": lambda a, r: births(a) < 512 or f"fork bomb grew to {births(a)} processes",
    "memory_hog": lambda a, r: r.status is ExecStatus.MEMORY or f"status {r.status}",
    "disk_one_big_file": lambda a, r: r.status is ExecStatus.DISK or f"status {r.status}",
    "disk_many_small_files": lambda a, r: r.status is ExecStatus.DISK or f"status {r.status}",
    "stdout_flood": lambda a, r: (
        (a.node / "stdout.txt").stat().st_size < 100_000 + 200 or "stdout.txt grew past output_bytes"
    ),
    "sleep_forever": lambda a, r: r.status is ExecStatus.TIMEOUT or f"status {r.status}",
    "ignore_sigterm": lambda a, r: r.status is ExecStatus.TIMEOUT or f"status {r.status}",
}


def escapes(a: Arena, attack: Attack, result, before: dict, elapsed: float, limits: Limits, knocked: list) -> list[str]:
    """Every sign that the attack got anywhere, as readable strings (empty: contained)."""
    found = []
    outputs = b""
    for path in a.node.rglob("*"):
        # never follow a link the script made: it may point at the sealed file itself
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 1_000_000:
            outputs += path.read_bytes()
    if a.canary.encode() in outputs:
        found.append("a secret (sealed label or API key) reached the script's output")
    for line in outputs.decode("utf-8", "replace").splitlines():
        if line.startswith("PWNED"):
            found.append(line)
    after = a.protected()
    found += [f"changed: {k}" for k, v in before.items() if after.get(k) != v]
    if not alive(a.victim.pid):
        found.append("the agent was killed")
    found += [f"{kind} listener got {data[:40]!r}" for kind, data in a.listeners.received]
    if knocked:
        found.append(f"the host reached the script's listening port {knocked[0]}")
    left = [p for p in survivors(a.marker) if p != a.victim.pid]
    if left:
        found.append(f"processes survived the run: {left}")
    mounts = [m for m in mountpoints_under(a.root) if m != str(a.hidden)]
    if mounts:
        found.append(f"mounted: {mounts}")
    if elapsed > limits.timeout_s + limits.term_grace_s + 5:
        found.append(f"run() took {elapsed:.1f} s")
    check = SPECIFIC.get(attack.name)
    if check is not None and (verdict := check(a, result)) is not True:
        found.append(verdict)
    return found


@pytest.mark.parametrize("attack,layer", list(cases()))
def test_attack_is_contained(attack: Attack, layer: str, arena: Arena):
    sandbox = LocalSandbox() if layer == "local" else BwrapSandbox()
    if layer == "local" and attack.name == "umount" and IS_ROOT:
        arena.mount_hidden()
    targets = str(arena.hidden) if layer == "local" else f"/data:/proc:/usr:{arena.node}"
    (arena.node / "solution.py").write_text(PRELUDE + textwrap.dedent(attack.code))
    before = arena.protected()
    limits = Limits(**{"timeout_s": 5.0, "term_grace_s": 0.3, **attack.limits})
    env = safe_env(cwd=arena.node, extra=arena.env(targets))
    leaked = os.open(arena.journal, os.O_WRONLY | os.O_APPEND)
    os.set_inheritable(leaked, True)  # a careless agent: the sandbox must close it anyway
    knocked: list = []
    knocker = None
    if attack.name == "listening_backdoor":
        knocker = threading.Thread(target=knock, args=(arena, knocked), daemon=True)
        knocker.start()
    t0 = time.monotonic()
    try:
        result = sandbox.run(
            [sys.executable, "solution.py"],
            arena.node,
            env,
            limits,
            arena.node / "stdout.txt",
            arena.node / "stderr.txt",
            data_dir=arena.data,
        )
    finally:
        os.close(leaked)
    elapsed = time.monotonic() - t0
    if knocker is not None:
        knocker.join(5)
    expected_uid = {"local": 65534 if LOCAL_DROPS else os.geteuid(), "bwrap": 65534 if BWRAP_DROPS else os.geteuid()}[
        layer
    ]
    if result.status is not ExecStatus.SANDBOX_ERROR:
        assert result.run_uid == expected_uid, result.notes
    found = escapes(arena, attack, result, before, elapsed, limits, knocked)
    kill_all(arena.marker)  # leave nothing behind even when the attack won
    assert not found, f"{attack.name} escaped the {layer} layer: {found}\n{result.reason}"


def test_corpus_is_large_and_covers_every_promise():
    assert len(ATTACKS) >= 30
    promises = {a.local for a in ATTACKS} | {a.bwrap for a in ATTACKS}
    assert {NC, UID, ROOT} <= promises


PLANT_LINKS = """
for name in (".score.json.tmp", ".report.md.tmp", "score.json", "report.md"):
    try:
        os.symlink(E["A_SCORER"], name)
    except OSError as exc:
        print("blocked:", name, exc)
"""


@pytest.mark.parametrize(
    "layer",
    [
        "local",
        pytest.param("bwrap", marks=pytest.mark.skipif(not BWRAP_OK, reason=BWRAP_WHY)),
    ],
)
def test_harness_writes_after_the_run_do_not_follow_planted_links(layer, arena):
    from mlguild.util.fs import atomic_write

    sandbox = LocalSandbox() if layer == "local" else BwrapSandbox()
    (arena.node / "solution.py").write_text(PRELUDE + PLANT_LINKS)
    before = arena.protected()
    r = sandbox.run(
        [sys.executable, "solution.py"],
        arena.node,
        safe_env(cwd=arena.node, extra=arena.env("")),
        Limits(timeout_s=10),
        arena.node / "stdout.txt",
        arena.node / "stderr.txt",
        data_dir=arena.data,
    )
    assert r.status is ExecStatus.OK
    # what the executor does next, as root, outside the sandbox
    atomic_write(arena.node / "score.json", '{"score": 0.5}')
    atomic_write(arena.node / "report.md", "# report\n")
    assert arena.protected()[str(arena.scorer)] == before[str(arena.scorer)], (
        "the harness wrote through a link the script planted: the scorer was overwritten"
    )
