"""Supervisor: runs ONE untrusted script and makes sure nothing it started outlives it.

Stdlib only, so it starts in ~12 ms and cannot be broken by the project's environment:
``python -I -S`` imports it from its own directory (``supervisor_start.SUPERVISOR_ARGV``; running
it by path works too) with a marshalled spec on stdin (built by
``mlguild.sandbox.runner``). It writes one Python-literal dict per line to stdout: first
``{'event': 'started', 'pid': <main pid>}``, last ``{'event': 'result', ...}``. Every
import here is paid by every run: no json, subprocess or signal (all three pull in re or
enum).

What it guarantees while it is alive (the tree's side of it is tree.py):
- it is a child subreaper, so every orphaned descendant (setsid + double-fork daemons,
  abandoned pool workers) reparents to it and is found by walking /proc;
- the wall-clock deadline: SIGTERM to every descendant, ``term_grace_s``, then SIGKILL;
- the tree caps, sampled: resident memory (sum of RSS; PSS when the plain sum is over the
  cap, so copy-on-write pages shared by forked workers are not counted N times), live
  processes (``tree_procs``), and the disk used under the working directory;
- when the main process ends, for any reason, every remaining descendant is SIGKILLed and
  reaped until the kernel says it has no children left; only then is the result written;
- stdout/stderr are read continuously (a flood never blocks the script) into files that
  keep a head and a tail of ``output_bytes`` in all, with a marker where bytes were dropped;
- it dies with the agent: PDEATHSIG is SIGTERM, whose handler runs the same sweep (armed
  once it has its spec; one started ahead that is still waiting for a spec exits on EOF).

``spec["drop"]`` (always-on layer, agent running as root): the script runs as that uid/gid
if a forked probe that switches to it can reach everything the script needs; otherwise as
root without CAP_SYS_PTRACE, with a note in the result. ``spec["wrapped"]`` (namespace
layer): the main process is bubblewrap; it and its namespace init (known by its pid in
that namespace, 1, since it outlives bwrap; the script's main process is 2 there) are
spared the SIGTERM (so the script gets its grace period), killed last, and not counted as
the script's processes; the init's pid is reported (``{'event': 'wrapped', 'init':
[pid]}``); an exit code 128+N from bubblewrap means the script died of signal N.

We are not dumpable, so a script running as our uid cannot ptrace us (spawn.py takes
CAP_SYS_PTRACE from a root one). It can SIGKILL or SIGSTOP us: then the main process dies
(its PDEATHSIG is SIGKILL) and the agent sweeps its session, or the agent, seeing us
stopped, kills our whole tree and us (see runner.py).
"""

from __future__ import annotations

import _signal as signal  # the C module: ``signal`` imports enum (~5 ms of every start)
import marshal
import os
import resource
import select
import sys
import time

if __package__:
    from . import procfs
    from .capture import CappedSink
    from .spawn import child_setup, spawn
    from .tree import MIB, Run
else:  # started with -I: our own directory may not be on sys.path (appended: stdlib wins)
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import procfs  # type: ignore[no-redef]  # the same module by its plain name, not a second one
    from capture import CappedSink  # type: ignore[no-redef]  # likewise
    from spawn import child_setup, spawn  # type: ignore[no-redef]  # likewise
    from tree import MIB, Run  # type: ignore[no-redef]  # likewise

DRAIN_LIMIT_S = 2.0  # an fd passed to an outsider must not hang us forever
DISK_DUTY = 0.05  # at most this share of a core goes to walking the working directory


def run(r: Run, emit) -> dict:
    """Run the script described by ``r.spec`` to the end; return the raw result dict."""
    spec = r.spec
    limits = spec["limits"]
    notes = list(spec.get("notes", []))
    run_uid = spec.get("run_uid", os.getuid())
    drop = None
    if spec.get("drop"):
        d = spec["drop"]
        bad = procfs.access_problem(d["uid"], d["gid"], d["checks"])
        if bad:
            notes.append(f"ran as uid {os.getuid()}, not {d['uid']}: {bad} is not reachable by it")
        else:
            drop, run_uid = (d["uid"], d["gid"]), d["uid"]
    nnp = not r.wrapped
    out = CappedSink(spec["stdout_path"], limits["output_bytes"])
    err = CappedSink(spec["stderr_path"], limits["output_bytes"])
    try:
        pid, out_r, err_r = spawn(
            spec["argv"],
            spec["cwd"],
            spec["env"],
            lambda: child_setup(spec["rlimits"], r.me, drop, nnp, spec.get("cpus")),
        )
    except OSError as exc:
        out.close()
        err.close()
        return {"error": f"could not start {spec['argv'][:1]}: {exc}"}
    start = time.monotonic()
    r.main = pid
    emit({"event": "started", "pid": pid})

    sinks = {out_r: out, err_r: err}
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
    mem_cap = limits["tree_memory_mb"] * MIB if limits["tree_memory_mb"] else None
    disk_cap = limits["disk_mb"] * MIB if limits.get("disk_mb") else None
    files_cap = limits.get("max_files")
    watch_disk = disk_cap is not None or files_cap is not None
    poll_s = spec.get("poll_s", 0.15)
    next_tree = next_disk = start + poll_s
    # bwrap's init outlives bwrap: if we are killed, the agent kills it (and with it the
    # namespace) by the pid we report, so learn it early, from bwrap's list of children,
    # until the first scan of the tree (which learns it too)
    learn_at = start + 0.005 if r.wrapped else None
    reported = not r.wrapped

    def report_init() -> bool:
        if len(r.wrappers) < 2:
            return False
        emit({"event": "wrapped", "init": sorted(r.wrappers - {r.main})})
        return True

    while r.reap() and r.main_status is None:
        now = time.monotonic()
        if r.stop_signal is not None:
            r.sweep()
            break
        if kill_at is None and now >= deadline:
            r.timed_out = True
            r.signal_tree(signal.SIGTERM, spare_wrappers=True)
            kill_at = now + limits["term_grace_s"]
        if kill_at is not None and now >= kill_at:
            r.sweep()
            break
        if learn_at is not None and now >= learn_at:
            r.learn_init()
            reported = report_init()
            learn_at = None if reported else now + 0.01
        if now >= next_tree:
            r.check_tree(mem_cap, limits.get("tree_procs"))
            next_tree = now + poll_s
            learn_at = None
            reported = reported or report_init()
            if r.memory_exceeded or r.procs_exceeded:
                break
        if watch_disk and now >= next_disk:
            took = r.check_disk(spec["cwd"], disk_cap, files_cap)
            next_disk = time.monotonic() + max(poll_s, took / DISK_DUTY)
            if r.disk_exceeded:
                break
        pump(
            min(kill_at or deadline, next_tree, next_disk if watch_disk else deadline, learn_at or deadline, now + 0.25)
        )

    end = r.main_end if r.main_status is not None else time.monotonic()
    r.sweep()  # whatever the main script left behind
    if watch_disk and not r.disk_exceeded:
        r.check_disk(spec["cwd"], disk_cap, files_cap)  # a burst that fell between samples
    drain_end = time.monotonic() + DRAIN_LIMIT_S
    while sinks and time.monotonic() < drain_end:
        pump(drain_end)
    out.close()
    err.close()

    # Samples miss short runs; the kernel's peak of the largest single reaped process doesn't.
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    r.peak_rss = max(r.peak_rss, largest)
    status = r.main_status
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
    if r.wrapped and code is not None and 128 < code <= 128 + 64:
        sig = code - 128  # bwrap reports a signal death of its child this way
        code = None
    result = {
        "exit_code": code,
        "signal": sig,
        "duration_s": round(end - start, 4),
        "timed_out": r.timed_out,
        "memory_exceeded": r.memory_exceeded,
        "procs_exceeded": r.procs_exceeded,
        "disk_exceeded": r.disk_exceeded,
        "disk_seen": r.disk_seen,
        "peak_tree_rss_mb": round(r.peak_rss / MIB, 1),
        "peak_disk_mb": round(r.peak_disk / MIB, 1),
        "stdout_truncated": out.dropped > 0,
        "stderr_truncated": err.dropped > 0,
        "descendants_killed": len(r.signalled - {r.main, r.script_main} - r.wrappers),
        "leftover": r.leftover,
        "undrained": len(sinks),
        "run_uid": run_uid,
        "notes": notes,
        "timeout_s": limits["timeout_s"],
        "tree_memory_mb": limits["tree_memory_mb"],
        "tree_procs": limits.get("tree_procs"),
        "disk_mb": limits.get("disk_mb"),
        "max_files": files_cap,
    }
    if r.stop_signal is not None:
        result["error"] = f"supervisor stopped by signal {r.stop_signal}"
    elif status is None:
        result["error"] = "the script's main process could not be reaped"
    return result


def main() -> int:
    # Not dumpable: a script running as our uid without CAP_SYS_PTRACE (spawn.py drops it
    # from a root script) cannot ptrace us, nor open our /proc/<pid>/mem, so it cannot
    # freeze us in a ptrace stop. Before the spec, so a supervisor started ahead is covered
    # while it waits.
    procfs.prctl(procfs.PR_SET_DUMPABLE, 0)
    # marshal and repr, not json: json pulls in re, and this process's start is every script's
    # start overhead (the agent reads the lines back with ast.literal_eval).
    data = sys.stdin.buffer.read()
    if not data:  # a supervisor started ahead whose agent went away without a run for it
        return 0
    spec = marshal.loads(data)
    procfs.prctl(procfs.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != spec["agent_pid"]:  # the agent died before PDEATHSIG was armed
        return 1
    procfs.prctl(procfs.PR_SET_CHILD_SUBREAPER, 1)
    r = Run(spec)

    def on_stop(signum, _frame):  # SIGTERM (also our PDEATHSIG): sweep now, then report
        r.stop_signal = signum

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_stop)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake poll() via the wakeup fd

    def emit(obj: dict) -> None:
        try:
            sys.stdout.write(repr(obj) + "\n")
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
