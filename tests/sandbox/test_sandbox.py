"""Adversarial tests of the always-on sandbox layer: real processes, nothing mocked.

Each test runs an attack script through LocalSandbox and fails if containment fails.
Every script lives in its own tmp_path, and forked children keep their parent's argv, so
any process whose command line mentions tmp_path after a run is a survivor; the autouse
fixture asserts there are none after every test (and kills them so one failure does not
poison the next test).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from adversarial.arena import alive, kill_all, survivors

import mlguild
from mlguild.core.errors import ConfigError
from mlguild.sandbox import (
    BwrapSandbox,
    ExecResult,
    ExecStatus,
    Limits,
    LocalSandbox,
    describe_layer,
    get_sandbox,
    is_strong,
    safe_env,
)
from mlguild.sandbox.bwrap import probe

SRC_DIR = Path(mlguild.__file__).resolve().parents[1]  # for the agent subprocess's PYTHONPATH


# --- helpers -------------------------------------------------------------------------


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


@pytest.fixture(autouse=True)
def no_survivors(tmp_path):
    yield
    left = survivors(str(tmp_path))
    kill_all(str(tmp_path))  # clean up before failing, so the next test starts clean
    assert not left, f"processes survived the run: {left}"


def run_script(tmp_path: Path, code: str, env: dict | None = None, **limits) -> tuple[ExecResult, float]:
    """Run ``code`` as tmp_path/script.py; return the result and the wall time of run()."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    t0 = time.monotonic()
    result = LocalSandbox().run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env if env is not None else safe_env(cwd=tmp_path),
        limits=Limits(**limits),
        stdout_path=tmp_path / "stdout.txt",
        stderr_path=tmp_path / "stderr.txt",
    )
    return result, time.monotonic() - t0


# A daemon the classic way: fork, setsid, fork again, stdio to /dev/null, sleep forever.
# It escapes killpg of the script's group and session; only the subreaper sweep finds it.
DAEMON = """
import os, sys, time
def spawn_daemon(pidfile):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            fd = os.open(os.devnull, os.O_RDWR)
            for i in (0, 1, 2):
                os.dup2(fd, i)
            with open(pidfile, "a") as f:
                f.write(f"{os.getpid()}\\n")
            while True:
                time.sleep(1)
        os._exit(0)
    while not os.path.exists(pidfile):
        time.sleep(0.01)
"""


# --- outcomes ------------------------------------------------------------------------


def test_ok_script_output_and_duration(tmp_path):
    r, elapsed = run_script(tmp_path, "print('hello'); import sys; print('warn', file=sys.stderr)")
    assert r.status is ExecStatus.OK and r.exit_code == 0 and r.signal is None
    assert r.stdout_tail == "hello\n" and r.stderr_tail == "warn\n"
    assert (tmp_path / "stdout.txt").read_text() == "hello\n"
    assert 0 < r.duration_s < 2 and elapsed < 3
    assert json.loads(json.dumps(r.to_dict()))["status"] == "ok" and r.descendants_killed == 0


def test_crash_keeps_traceback(tmp_path):
    r, _ = run_script(tmp_path, "raise ValueError('boom-123')")
    assert r.status is ExecStatus.CRASH and r.exit_code == 1
    assert "Traceback" in r.stderr_tail and "ValueError: boom-123" in r.stderr_tail


def test_killed_by_own_signal_is_crash(tmp_path):
    r, _ = run_script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert r.status is ExecStatus.CRASH and r.signal == signal.SIGSEGV and r.exit_code is None


def test_missing_executable_is_sandbox_error(tmp_path):
    r = LocalSandbox().run(
        ["/nonexistent/python"], tmp_path, {}, Limits(timeout_s=5), tmp_path / "o.txt", tmp_path / "e.txt"
    )
    assert r.status is ExecStatus.SANDBOX_ERROR and "nonexistent" in r.reason


def test_get_sandbox_names():
    usable, why = probe()
    assert isinstance(get_sandbox(), BwrapSandbox if usable else LocalSandbox)
    assert isinstance(get_sandbox("local", gpu=False), LocalSandbox)  # bwrap's options ignored
    if usable:
        assert isinstance(get_sandbox("bwrap"), BwrapSandbox) and why == ""
    else:
        with pytest.raises(ConfigError, match="not usable"):
            get_sandbox("bwrap")
    with pytest.raises(ConfigError, match="unknown sandbox"):
        get_sandbox("docker")


def test_probe_explains_a_missing_bwrap():
    usable, why = probe("/nonexistent/bwrap")
    assert not usable and "apt-get install -y bubblewrap" in why


def test_layer_strength_and_description():
    local = LocalSandbox()
    assert not is_strong(local) and local.layer == "local"
    line = describe_layer(local)
    assert line.startswith("sandbox: local") and "WEAK" in line and "\n" not in line
    if os.geteuid() == 0:
        why = local.drop_problem(65534, 65534)
        assert ("as uid 65534" in line) == (why == "") and (why in line)
    if probe()[0]:
        ns = BwrapSandbox(gpu=False)
        assert is_strong(ns) and ns.layer == "bwrap"
        line = describe_layer(ns)
        assert "no network" in line and "GPU devices: none" in line and "\n" not in line


# --- timeouts ------------------------------------------------------------------------


def test_timeout_kills_sleeper_on_time(tmp_path):
    r, elapsed = run_script(tmp_path, "import time; time.sleep(1000)", timeout_s=1)
    assert r.status is ExecStatus.TIMEOUT and r.timed_out
    assert r.signal == signal.SIGTERM
    assert 1.0 <= elapsed < 1.0 + 1.0 + 1.0


def test_sigterm_ignored_still_killed_after_grace(tmp_path):
    r, elapsed = run_script(
        tmp_path,
        """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open('pid', 'w').write(str(os.getpid()))
        while True:
            time.sleep(0.05)
        """,
        timeout_s=0.8,
        term_grace_s=0.5,
    )
    assert r.status is ExecStatus.TIMEOUT and r.signal == signal.SIGKILL
    assert 1.3 <= elapsed < 1.3 + 1.0
    assert not alive(read_pids(tmp_path / "pid")[0])


# --- no survivors --------------------------------------------------------------------


def test_double_fork_daemon_killed_when_main_exits(tmp_path):
    r, elapsed = run_script(tmp_path, DAEMON + "spawn_daemon('daemon.pid')\nprint('main done')\n")
    assert r.status is ExecStatus.OK and r.stdout_tail == "main done\n"
    (daemon,) = read_pids(tmp_path / "daemon.pid")
    assert not alive(daemon)
    assert r.descendants_killed >= 1 and elapsed < 5


def test_double_fork_daemon_killed_on_timeout(tmp_path):
    code = DAEMON + "spawn_daemon('daemon.pid')\ntime.sleep(1000)\n"
    r, _ = run_script(tmp_path, code, timeout_s=1)
    assert r.status is ExecStatus.TIMEOUT
    (daemon,) = read_pids(tmp_path / "daemon.pid")
    assert not alive(daemon)


def test_fifty_children_in_their_own_groups_all_killed(tmp_path):
    r, _ = run_script(
        tmp_path,
        """
        import os, time
        pids = []
        for _ in range(50):
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)  # out of the script's process group: killpg misses it
                time.sleep(1000)
                os._exit(0)
            pids.append(pid)
        open('kids', 'w').write(' '.join(map(str, pids)))
        """,
    )
    assert r.status is ExecStatus.OK
    kids = read_pids(tmp_path / "kids")
    assert len(kids) == 50 and not any(alive(p) for p in kids)
    assert r.descendants_killed == 50


@pytest.mark.parametrize("leave_group", ["", "os.setsid()"])
def test_growing_fork_chain_is_caught(tmp_path, leave_group):
    # Every member forks the next one and then sleeps, so the tree keeps growing while
    # the sweep runs; killing a member orphans its child to the supervisor. With setsid
    # each member is alone in its group, so only the per-pid /proc sweep can catch it.
    r, elapsed = run_script(
        tmp_path,
        f"""
        import os, time
        if os.fork() == 0:
            while True:
                {leave_group}
                time.sleep(0.003)
                if os.fork() != 0:
                    while True:
                        time.sleep(1)
        time.sleep(0.5)
        """,
    )
    assert r.status is ExecStatus.OK and r.descendants_killed >= 10 and elapsed < 8


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_abandoned_multiprocessing_pool_killed(tmp_path, method):
    r, _ = run_script(
        tmp_path,
        f"""
        import multiprocessing as mp, os, time
        if __name__ == '__main__':
            ctx = mp.get_context({method!r})
            pool = ctx.Pool(4)
            pool.map_async(time.sleep, [1000] * 4, chunksize=1)  # busy, never joined
            pids = [p.pid for p in pool._pool]
            open('workers', 'w').write(' '.join(map(str, pids)))
            time.sleep(0.3)
            os._exit(0)  # no atexit, no pool finaliser: the workers are simply abandoned
        """,
    )
    assert r.status is ExecStatus.OK
    workers = read_pids(tmp_path / "workers")
    assert len(workers) == 4 and not any(alive(p) for p in workers)
    assert r.descendants_killed >= 4


def test_child_holding_stdout_does_not_hang(tmp_path):
    r, elapsed = run_script(
        tmp_path,
        """
        import os, sys, time
        if os.fork() == 0:  # inherits the stdout pipe and keeps it open
            open('child.pid', 'w').write(str(os.getpid()))
            while True:
                print('child still talking', flush=True)
                time.sleep(0.05)
        while not os.path.exists('child.pid'):
            time.sleep(0.01)
        print('main done', flush=True)
        """,
        timeout_s=30,
    )
    assert r.status is ExecStatus.OK and elapsed < 5
    assert "main done" in (tmp_path / "stdout.txt").read_text()
    assert not alive(read_pids(tmp_path / "child.pid")[0])


def test_agent_killed_with_sigkill_takes_the_script_down(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        DAEMON
        + textwrap.dedent("""
        open('main.pid', 'w').write(str(os.getpid()))
        spawn_daemon('daemon.pid')
        time.sleep(1000)
    """)
    )
    agent_code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from mlguild.sandbox import LocalSandbox, Limits, safe_env
        d = Path({str(tmp_path)!r})
        LocalSandbox().run([sys.executable, {str(script)!r}], d, safe_env(cwd=d),
                           Limits(timeout_s=60), d / 'out.txt', d / 'err.txt')
    """)
    env = {**os.environ, "PYTHONPATH": str(SRC_DIR)}
    agent = subprocess.Popen([sys.executable, "-c", agent_code], env=env)
    try:
        end = time.monotonic() + 10
        # the pid files exist a moment before their pid is written
        while not (read_pids(tmp_path / "main.pid") and read_pids(tmp_path / "daemon.pid")):
            assert time.monotonic() < end, "the script never started"
            time.sleep(0.02)
        (main_pid,) = read_pids(tmp_path / "main.pid")
        (daemon_pid,) = read_pids(tmp_path / "daemon.pid")
        assert alive(main_pid) and alive(daemon_pid)
        agent.kill()
        agent.wait()
        end = time.monotonic() + 2
        while (alive(main_pid) or alive(daemon_pid)) and time.monotonic() < end:
            time.sleep(0.02)
        assert not alive(main_pid), "the script outlived the agent"
        assert not alive(daemon_pid), "the script's daemon outlived the agent"
    finally:
        agent.kill()
        agent.wait()


def test_script_that_kills_its_supervisor(tmp_path):
    # Root can kill the supervisor. Then the main script dies of its PDEATHSIG and the
    # agent kills what is left of the script's session; the run is a sandbox error.
    r, elapsed = run_script(
        tmp_path,
        """
        import os, signal, time
        if os.fork() == 0:
            open('child.pid', 'w').write(str(os.getpid()))
            time.sleep(1000)
        while not os.path.exists('child.pid'):
            time.sleep(0.01)
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(1000)
        """,
        timeout_s=30,
    )
    assert r.status is ExecStatus.SANDBOX_ERROR and "supervisor" in r.reason
    assert elapsed < 5 and not alive(read_pids(tmp_path / "child.pid")[0])


def test_script_that_freezes_its_supervisor(tmp_path):
    # SIGSTOP on the supervisor (a script sharing its uid can send it): the agent sees it
    # stopped within two checks and kills the script's tree and the supervisor itself,
    # long before the safety timer (timeout + grace + slack) would fire.
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent("""
        import os, signal, time
        if os.fork() == 0:
            os.setsid()  # out of the main script's session: only a tree walk finds it
            open('child.tmp', 'w').write(str(os.getpid()))
            os.rename('child.tmp', 'child.pid')
            time.sleep(1000)
        while not os.path.exists('child.pid'):
            time.sleep(0.01)
        os.kill(os.getppid(), signal.SIGSTOP)
        time.sleep(1000)
    """)
    )
    t0 = time.monotonic()
    r = LocalSandbox().run(
        [sys.executable, str(script)],
        tmp_path,
        safe_env(cwd=tmp_path),
        Limits(timeout_s=60),
        tmp_path / "o.txt",
        tmp_path / "e.txt",
    )
    assert r.status is ExecStatus.SANDBOX_ERROR and "supervisor was stopped" in r.reason
    assert time.monotonic() - t0 < 5
    assert r.descendants_killed == 1 and not alive(read_pids(tmp_path / "child.pid")[0])


PTRACE_PARENT = """
import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_ATTACH = 16
if libc.ptrace(PTRACE_ATTACH, os.getppid(), None, None) == 0:
    print("attached", flush=True)
    time.sleep(1000)  # keep the supervisor in its ptrace stop
print("refused", errno.errorcode[ctypes.get_errno()])
"""


def test_script_cannot_ptrace_its_supervisor(tmp_path):
    # The supervisor is not dumpable, and a root script has no CAP_SYS_PTRACE: attaching
    # fails, so the supervisor keeps running and the run ends on the script's own terms.
    r, elapsed = run_script(tmp_path, PTRACE_PARENT, timeout_s=60)
    assert r.status is ExecStatus.OK, r.reason
    assert r.stdout_tail == "refused EPERM\n" and elapsed < 5


@pytest.mark.skipif(os.geteuid() != 0, reason="attaching a non-dumpable process needs CAP_SYS_PTRACE")
def test_supervisor_held_in_a_ptrace_stop_is_killed_promptly(tmp_path):
    # The agent's own check, for whatever gets past the above: a tracer (here from outside
    # the tree, with CAP_SYS_PTRACE) holds the supervisor in a ptrace stop. The agent
    # kills the script's tree and the supervisor within a second or so.
    (tmp_path / "script.py").write_text(
        DAEMON
        + textwrap.dedent("""
        spawn_daemon('daemon.pid')
        open('ready', 'w').close()
        time.sleep(1000)
    """)
    )
    sandbox = LocalSandbox(prestart=False)  # its only child is then this run's supervisor
    done: dict = {}
    runner = threading.Thread(
        target=lambda: done.setdefault(
            "r",
            sandbox.run(
                [sys.executable, "script.py"],
                tmp_path,
                safe_env(cwd=tmp_path),
                Limits(timeout_s=60),
                tmp_path / "o.txt",
                tmp_path / "e.txt",
            ),
        )
    )
    runner.start()
    tracer = None
    try:
        end = time.monotonic() + 10
        while not (tmp_path / "ready").exists():
            assert time.monotonic() < end, "the script never started"
            time.sleep(0.02)
        # ours, and busy: other sandboxes of this process may keep one started ahead, idle
        (supervisor,) = [p for p in children(os.getpid()) if b"supervisor" in cmdline(p) and children(p)]
        tracer = subprocess.Popen([sys.executable, "-c", TRACER, str(supervisor)], stdout=subprocess.PIPE, text=True)
        assert tracer.stdout.readline() == "attached\n"
        t0 = time.monotonic()
        runner.join(10)
        assert not runner.is_alive(), "the agent waited for a supervisor held in a ptrace stop"
        r = done["r"]
        assert r.status is ExecStatus.SANDBOX_ERROR and f"traced by pid {tracer.pid}" in r.reason
        assert time.monotonic() - t0 < 3
        assert r.descendants_killed == 1 and not alive(read_pids(tmp_path / "daemon.pid")[0])
    finally:
        if tracer is not None:
            tracer.kill()
            tracer.wait()
            tracer.stdout.close()
        runner.join(30)


# Attaches to a pid and holds it in its ptrace stop until it dies (waiting on it lets the
# real parent reap it then).
TRACER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid = int(sys.argv[1])
assert libc.ptrace(16, pid, None, None) == 0, os.strerror(ctypes.get_errno())
print("attached", flush=True)
while True:
    _, status = os.waitpid(pid, 0x40000000)  # __WALL: a tracee that is not our child
    if os.WIFEXITED(status) or os.WIFSIGNALED(status):
        break
"""


def children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(b")", 1)[1].split()[1]) == pid:
                out.append(int(name))
    return out


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# --- the supervisor started ahead for the next run ----------------------------------


def test_next_run_survives_its_prestarted_supervisor_killed_or_stopped(tmp_path):
    # A script sharing the agent's uid can signal the supervisor that waits for the next
    # run: that run still works, with a fresh one (killed) or after a SIGCONT (stopped).
    sandbox = LocalSandbox()
    args = (
        [sys.executable, "-c", "print('hi')"],
        tmp_path,
        safe_env(cwd=tmp_path),
        Limits(timeout_s=10),
        tmp_path / "o.txt",
        tmp_path / "e.txt",
    )
    assert sandbox.run(*args).status is ExecStatus.OK
    for sig in (signal.SIGKILL, signal.SIGSTOP):
        spare = sandbox._spares.spare.proc
        os.kill(spare.pid, sig)
        if sig == signal.SIGKILL:
            spare.wait(timeout=5)
        t0 = time.monotonic()
        r = sandbox.run(*args)
        assert r.status is ExecStatus.OK and r.stdout_tail == "hi\n", r.reason
        assert time.monotonic() - t0 < 5


def test_prestarted_supervisor_goes_with_its_agent(tmp_path):
    # Idle, it has no PDEATHSIG armed yet: it must leave on the EOF of its spec pipe.
    agent_code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from mlguild.sandbox import Limits, LocalSandbox, safe_env
        d = Path({str(tmp_path)!r})
        sandbox = LocalSandbox()
        sandbox.run([sys.executable, "-c", "pass"], d, safe_env(cwd=d), Limits(timeout_s=10),
                    d / "o.txt", d / "e.txt")
        print(sandbox._spares.spare.proc.pid, flush=True)
        time.sleep(60)
    """)
    agent = subprocess.Popen(
        [sys.executable, "-c", agent_code], stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(SRC_DIR)}
    )
    try:
        spare = int(agent.stdout.readline())
        assert alive(spare)
        agent.kill()
        agent.wait()
        end = time.monotonic() + 5
        while alive(spare) and time.monotonic() < end:
            time.sleep(0.02)
        assert not alive(spare)
    finally:
        agent.kill()
        agent.wait()
        agent.stdout.close()


def test_command_found_on_path_under_a_dropped_uid():
    # The supervisor searches PATH itself, after the drop: nothing there may need a file
    # that only the agent's uid can read (e.g. a module of a Python under /root).
    work = Path(tempfile.mkdtemp(prefix="mlguild-path-"))
    try:
        work.chmod(0o755)  # reachable by the dropped uid, as a run directory is
        r = LocalSandbox().run(
            ["sh", "-c", "id -u"], work, safe_env(cwd=work), Limits(timeout_s=10), work / "o.txt", work / "e.txt"
        )
        assert r.status is ExecStatus.OK, r.reason
        assert r.stdout_tail == f"{r.run_uid}\n"
    finally:
        shutil.rmtree(work)


# --- memory --------------------------------------------------------------------------

MEMORY_HOG = """
import time
hog = []
while True:
    hog.append(bytearray(b'x') * (100 * 1024 * 1024))  # filled, so really resident
    time.sleep(0.02)
"""


def test_memory_hog_hits_tree_cap(tmp_path):
    r, elapsed = run_script(tmp_path, MEMORY_HOG, tree_memory_mb=300, timeout_s=20)
    assert r.status is ExecStatus.MEMORY and r.memory_exceeded
    assert r.peak_tree_rss_mb > 300 and elapsed < 5


def test_tree_cap_sums_over_children(tmp_path):
    # Each of 4 children stays at 120 MB (under the cap alone); together they are over it.
    r, elapsed = run_script(
        tmp_path,
        """
        import os, time
        for _ in range(4):
            if os.fork() == 0:
                block = bytearray(b'x') * (120 * 1024 * 1024)
                time.sleep(1000)
        time.sleep(1000)
        """,
        tree_memory_mb=300,
        timeout_s=20,
    )
    assert r.status is ExecStatus.MEMORY and elapsed < 5 and r.descendants_killed == 4


def test_address_space_limit_gives_memory_error(tmp_path):
    # the tree cap is only a backstop here: RLIMIT_AS must fire first, at ~400 MB
    r, _ = run_script(tmp_path, MEMORY_HOG, memory_mb=400, tree_memory_mb=2000, timeout_s=20)
    assert r.status is ExecStatus.MEMORY and not r.memory_exceeded
    assert "MemoryError" in r.stderr_tail


# --- output --------------------------------------------------------------------------


def test_output_flood_is_bounded_head_and_tail_kept(tmp_path):
    r, elapsed = run_script(
        tmp_path,
        """
        import sys
        out = sys.stdout.buffer
        out.write(b'FIRST-LINE\\n')
        chunk = b'y' * 1023 + b'\\n'
        for _ in range(50 * 1024):  # 50 MB
            out.write(chunk)
        out.write(b'LAST-LINE\\n')
        """,
        output_bytes=100_000,
    )
    assert r.status is ExecStatus.OK and r.stdout_truncated and not r.stderr_truncated
    data = (tmp_path / "stdout.txt").read_bytes()
    assert len(data) < 100_000 + 200
    assert data.startswith(b"FIRST-LINE\n") and data.endswith(b"LAST-LINE\n")
    assert b"bytes dropped here" in data and r.stdout_tail.endswith("LAST-LINE\n")
    assert elapsed < 10


def test_endless_print_loop_times_out_with_bounded_files(tmp_path):
    r, elapsed = run_script(
        tmp_path,
        """
        import sys
        i = 0
        while True:
            print('line', i); print('err', i, file=sys.stderr); i += 1
        """,
        timeout_s=1.5,
        output_bytes=50_000,
    )
    assert r.status is ExecStatus.TIMEOUT and elapsed < 4
    for name in ("stdout.txt", "stderr.txt"):
        data = (tmp_path / name).read_bytes()
        assert len(data) < 50_000 + 200 and b"bytes dropped here" in data
    assert r.stdout_truncated and r.stderr_truncated


# --- environment, cwd, rlimits -------------------------------------------------------


def test_env_allowlist_hides_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-0451")
    monkeypatch.setenv("HF_TOKEN", "hf-canary-0451")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    env = safe_env({"MLGUILD_DATA": "/data/x"}, cwd=tmp_path)
    r, _ = run_script(tmp_path, "import json, os; print(json.dumps(dict(os.environ)))", env=env)
    assert r.status is ExecStatus.OK
    seen = json.loads((tmp_path / "stdout.txt").read_text())
    assert "canary-0451" not in json.dumps(seen)
    assert seen == env  # exactly the env given, nothing added
    assert seen["HOME"] == str(tmp_path) and seen["PYTHONHASHSEED"] == "0"
    assert seen["OMP_NUM_THREADS"] == "3" and seen["MLGUILD_DATA"] == "/data/x"
    with pytest.raises(ConfigError, match="secret"):
        safe_env({"WANDB_API_KEY": "x"})


def test_cwd_and_rlimits_applied(tmp_path):
    r, _ = run_script(
        tmp_path,
        """
        import os, resource
        print(os.getcwd())
        for name in ('NOFILE', 'CORE', 'CPU', 'FSIZE'):
            print(name, resource.getrlimit(getattr(resource, 'RLIMIT_' + name))[0])
        """,
        nofile=256,
        fsize_mb=2,
        cpu_s=77,
    )
    lines = r.stdout_tail.splitlines()
    assert lines[0] == str(tmp_path)
    assert lines[1:] == ["NOFILE 256", "CORE 0", "CPU 77", f"FSIZE {2 * 1024 * 1024}"]


def test_fsize_limit_stops_a_huge_file(tmp_path):
    r, _ = run_script(
        tmp_path,
        """
        with open('big.bin', 'wb') as f:
            for _ in range(20):
                f.write(b'z' * (1024 * 1024))
        """,
        fsize_mb=1,
    )
    assert r.status is ExecStatus.CRASH and "File too large" in r.stderr_tail
    assert (tmp_path / "big.bin").stat().st_size <= 1024 * 1024


@pytest.mark.parametrize(
    "bad",
    [
        {"timeout_s": 0},
        {"disk_mb": 0},
        {"max_files": -1},
        {"tree_procs": 0},
        {"tmp_mb": 0},
        {"run_as_uid": -1},
    ],
)
def test_limits_validation(tmp_path, bad):
    with pytest.raises(ValueError):
        LocalSandbox().run(["true"], tmp_path, {}, Limits(**bad), tmp_path / "o", tmp_path / "e")


def test_bwrap_runs_an_interpreter_that_lives_under_tmp(tmp_path):
    """bwrap mounts in order: the private /tmp must not hide a venv (or a CI clone) under /tmp."""
    usable, why = probe()
    if not usable:
        pytest.skip(f"bubblewrap unusable here: {why}")
    venv = Path(tempfile.mkdtemp(prefix="mlguild-venv-", dir="/tmp"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        node = tmp_path / "node"
        node.mkdir()
        (node / "s.py").write_text("import sys; print('ran', sys.executable)\n")
        result = get_sandbox("bwrap").run(
            [str(venv / "bin" / "python"), "s.py"],
            cwd=node,
            env=safe_env(cwd=node),
            limits=Limits(timeout_s=30),
            stdout_path=node / "o.txt",
            stderr_path=node / "e.txt",
        )
        assert result.status == ExecStatus.OK, (node / "e.txt").read_text()
        assert "ran" in (node / "o.txt").read_text()
    finally:
        shutil.rmtree(venv, ignore_errors=True)


# Never beside one another: these tests kill sandboxed processes, and the lifecycle test of a
# namespace left to its init lost that namespace to a kill from a test run beside it.
pytestmark = pytest.mark.xdist_group("process-kills")
