"""Supervisor: runs ONE untrusted script and makes sure nothing it started outlives it.

Run by path, stdlib only, so it starts in ~20 ms and cannot be broken by the project's
environment: ``python -I -S supervisor.py`` with a JSON spec on stdin (see
``mlguild.sandbox.local`` for its fields). It writes JSON lines to stdout: first
``{"event": "started", "pid": <script pid>}``, last ``{"event": "result", ...}``.

What it guarantees while it is alive:
- it is a child subreaper, so every orphaned descendant (setsid + double-fork daemons,
  abandoned pool workers) reparents to it and is found by walking /proc;
- the wall-clock deadline: SIGTERM to every descendant, ``term_grace_s``, then SIGKILL;
- the tree memory cap: sum of RSS over descendants (PSS when the plain sum is over the
  cap, so copy-on-write pages shared by forked workers are not counted N times);
- when the main script ends, for any reason, every remaining descendant is SIGKILLed and
  reaped until the kernel says it has no children left; only then is the result written;
- stdout/stderr are read continuously (a flood never blocks the script) into files that
  keep a head and a tail of ``output_bytes`` in all, with a marker where bytes were dropped;
- it dies with the agent: PDEATHSIG is SIGTERM, whose handler runs the same sweep.
It can itself be SIGKILLed by a script running as the same uid; then the main script
dies (its PDEATHSIG is SIGKILL) and the agent sweeps its session (see local.py).

This module is also imported by local.py for the /proc helpers; importing has no effects.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
SWEEP_LIMIT_S = 5.0  # a process stuck in uninterruptible sleep must not hang us forever
DRAIN_LIMIT_S = 2.0  # an fd passed to an outsider must not hang us forever
MARKER = b"\n[mlguild sandbox: %d bytes dropped here; the head and the tail are kept]\n"

_libc = None


def prctl(option: int, arg: int) -> None:
    """Call prctl(2) with one argument; raise OSError on failure."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    z = ctypes.c_ulong(0)
    if _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), z, z, z) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


# --- /proc ---------------------------------------------------------------------------


def proc_table() -> dict[int, tuple[int, int, int, bytes, int]]:
    """pid -> (ppid, pgrp, session, state, rss_pages) for every process in /proc.

    One read of /proc/<pid>/stat per process (~12 us each), so a scan of a few hundred
    processes every 150 ms costs well under 1% of a core.
    """
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                data = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:  # exited between listdir and open
            continue
        # comm (field 2) may contain spaces and ')', so split after the last ')'
        f = data[data.rfind(b")") + 2 :].split()
        table[int(name)] = (int(f[1]), int(f[2]), int(f[3]), f[0], int(f[21]))
    return table


def descendants(root: int, table: dict) -> list[int]:
    """Every pid in ``table`` whose parent chain leads to ``root`` (root excluded)."""
    children: dict[int, list[int]] = {}
    for pid, row in table.items():
        children.setdefault(row[0], []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def pss_bytes(pid: int) -> int:
    """Proportional set size of one process (0 if it is gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


# --- output capture ------------------------------------------------------------------


class CappedSink:
    """Writes a stream to a file, keeping the first half of ``cap`` bytes as they come
    (so a human can watch them live) and the last half in memory until ``close``."""

    def __init__(self, path: str, cap: int):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.head_left = cap // 2
        self.tail_cap = cap - cap // 2
        self.tail = bytearray()
        self.total = 0
        self.dropped = 0
        self.broken = False  # disk full or similar: keep counting, stop writing

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self.head_left > 0:
            head, data = data[: self.head_left], data[self.head_left :]
            self.head_left -= len(head)
            self._write(head)
        if data:
            self.tail += data
            excess = len(self.tail) - self.tail_cap
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def close(self) -> None:
        if self.dropped:
            self._write(MARKER % self.dropped)
        self._write(bytes(self.tail))
        os.close(self.fd)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.broken:
            try:
                view = view[os.write(self.fd, view) :]
            except OSError:
                self.broken = True


# --- the run -------------------------------------------------------------------------


def _child_setup(rlimits: dict, supervisor_pid: int) -> None:
    """Runs in the script's process between fork and exec (the supervisor is single-threaded)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != supervisor_pid:  # supervisor died before PDEATHSIG was armed
        os._exit(137)
    for name, (soft, hard) in rlimits.items():
        which = getattr(resource, f"RLIMIT_{name}")
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            # asked above the inherited hard limit: the tighter existing limit stands
            cur_hard = resource.getrlimit(which)[1]
            resource.setrlimit(which, (min(soft, cur_hard), cur_hard))


class Run:
    """State of one supervised run; ``main`` is the script's pid."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.me = os.getpid()
        self.main = -1
        self.main_status: int | None = None
        self.main_end = 0.0
        self.signalled: set[int] = set()
        self.peak_rss = 0
        self.timed_out = False
        self.memory_exceeded = False
        self.stop_signal: int | None = None
        self.leftover = 0

    def reap(self) -> bool:
        """Reap every exited child; record the main script's status. False: no children left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.main:
                self.main_status, self.main_end = status, time.monotonic()

    def signal_tree(self, sig: int) -> int:
        """Send ``sig`` to every live descendant; return how many were signalled.

        Whole process groups first: killpg is atomic against a fork in flight (the kernel
        restarts a fork that races a group signal), so a fork loop that stays in its group
        dies in one round however slow the /proc scan is. Every group here lives in a
        session the script created, so it holds only descendants. Then each pid, for
        those that left their group.
        """
        table = proc_table()
        live = [p for p in descendants(self.me, table) if table[p][3] != b"Z"]
        for pgid in {table[p][1] for p in live} - {os.getpgid(0)}:
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
        for pid in live:
            # pid reuse between the scan and the kill would need the pid space to wrap in
            # those microseconds; zombies we have not reaped cannot be reused at all.
            try:
                os.kill(pid, sig)
                self.signalled.add(pid)
            except ProcessLookupError:
                pass
        return len(live)

    def sweep(self) -> None:
        """SIGKILL every descendant, repeatedly, until waitpid says no child is left.

        Killing a parent reparents its children to us (subreaper), so each round finds
        what the last one orphaned; a fork loop cannot outrun SIGKILL for long.
        """
        end = time.monotonic() + SWEEP_LIMIT_S
        while self.reap():
            left = self.signal_tree(signal.SIGKILL)
            if time.monotonic() > end:
                self.leftover = left
                return
            time.sleep(0.002 if left else 0.01)

    def check_memory(self, cap_bytes: int | None) -> None:
        """Sample the tree's memory (kept as the peak even with no cap); kill it over the cap."""
        table = proc_table()
        pids = descendants(self.me, table)
        total = sum(table[p][4] for p in pids) * PAGE
        if cap_bytes and total > cap_bytes:
            # RSS counts a page shared by N forked workers N times; PSS splits it.
            total = sum(pss_bytes(p) for p in pids)
        self.peak_rss = max(self.peak_rss, total)
        if cap_bytes and total > cap_bytes:
            self.memory_exceeded = True
            self.sweep()


def run(r: Run, emit) -> dict:
    """Run the script described by ``r.spec`` to the end; return the raw result dict."""
    spec = r.spec
    limits = spec["limits"]
    out = CappedSink(spec["stdout_path"], limits["output_bytes"])
    err = CappedSink(spec["stderr_path"], limits["output_bytes"])
    try:
        proc = subprocess.Popen(
            spec["argv"], cwd=spec["cwd"], env=spec["env"], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
            start_new_session=True,
            preexec_fn=lambda: _child_setup(spec["rlimits"], r.me),  # noqa: PLW1509 (single-threaded)
        )
    except (OSError, subprocess.SubprocessError) as exc:
        out.close(), err.close()
        return {"error": f"could not start {spec['argv'][:1]}: {exc}"}
    start = time.monotonic()
    r.main = proc.pid
    emit({"event": "started", "pid": proc.pid})

    sinks = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    poller = select.poll()
    for fd in sinks:
        poller.register(fd, select.POLLIN)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD/SIGTERM wake poll() at once, not at its timeout
    poller.register(wake_r, select.POLLIN)

    def pump(deadline: float | None) -> None:
        wait_ms = 0 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
        for fd, _ in poller.poll(wait_ms):
            if fd == wake_r:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                continue
            data = os.read(fd, 65536)
            if data:
                sinks[fd].write(data)
            else:  # EOF: every holder of the write end is gone
                poller.unregister(fd)
                del sinks[fd]

    deadline = start + limits["timeout_s"]
    kill_at = None
    cap = limits["tree_memory_mb"] * MIB if limits["tree_memory_mb"] else None
    poll_s = spec.get("poll_s", 0.15)
    next_mem = start + poll_s
    while r.reap() and r.main_status is None:
        now = time.monotonic()
        if r.stop_signal is not None:
            r.sweep()
            break
        if kill_at is None and now >= deadline:
            r.timed_out = True
            r.signal_tree(signal.SIGTERM)
            kill_at = now + limits["term_grace_s"]
        if kill_at is not None and now >= kill_at:
            r.sweep()
            break
        if now >= next_mem:
            r.check_memory(cap)
            next_mem = now + poll_s
            if r.memory_exceeded:
                break
        pump(min(kill_at or deadline, next_mem, now + 0.25))

    end = r.main_end if r.main_status is not None else time.monotonic()
    r.sweep()  # whatever the main script left behind
    drain_end = time.monotonic() + DRAIN_LIMIT_S
    while sinks and time.monotonic() < drain_end:
        pump(drain_end)
    out.close(), err.close()

    # Samples miss short runs; the kernel's peak of the largest single reaped process doesn't.
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    r.peak_rss = max(r.peak_rss, largest)
    status = r.main_status
    exited = status is not None and os.WIFEXITED(status)
    signalled = r.signalled - {r.main}
    result = {
        "exit_code": os.WEXITSTATUS(status) if exited else None,
        "signal": os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None,
        "duration_s": round(end - start, 4),
        "timed_out": r.timed_out,
        "memory_exceeded": r.memory_exceeded,
        "peak_tree_rss_mb": round(r.peak_rss / MIB, 1),
        "stdout_truncated": out.dropped > 0,
        "stderr_truncated": err.dropped > 0,
        "descendants_killed": len(signalled),
        "leftover": r.leftover,
        "undrained": len(sinks),
        "timeout_s": limits["timeout_s"],
        "tree_memory_mb": limits["tree_memory_mb"],
    }
    if r.stop_signal is not None:
        result["error"] = f"supervisor stopped by signal {r.stop_signal}"
    elif status is None:
        result["error"] = "the script's main process could not be reaped"
    return result


def main() -> int:
    spec = json.loads(sys.stdin.buffer.read())
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != spec["agent_pid"]:  # the agent died before PDEATHSIG was armed
        return 1
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    r = Run(spec)

    def on_stop(signum, _frame):  # SIGTERM (also our PDEATHSIG): sweep now, then report
        r.stop_signal = signum

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_stop)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake poll() via the wakeup fd

    def emit(obj: dict) -> None:
        try:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()
        except OSError:  # the agent is gone; the sweep still matters, the report does not
            pass

    try:
        result = run(r, emit)
    except BaseException:
        r.sweep()  # a bug here must not turn the script's children into orphans of init
        raise
    result["event"] = "result"
    emit(result)
    return 0


if __name__ == "__main__":
    os._exit(main())  # skip interpreter teardown (~7 ms): nothing is left to clean up
