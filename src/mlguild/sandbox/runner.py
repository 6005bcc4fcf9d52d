"""The agent's side of every layer: start the supervisor, watch it, wait with a safety
timer, report.

A layer (local.py, bwrap.py) only decides *what* runs (argv, env, uid, wrapper); this
module runs it the same way for all of them, so timeouts, the sweep, output capture and
the typed result behave identically whichever layer is in use. The agent also watches
the supervisor: one held stopped (SIGSTOP, a ptrace stop) cannot sweep or report, so the
agent kills the script's whole tree and the supervisor itself (``_wait``, ``sweep.kill_tree``).

Starting the supervisor's interpreter is the largest part of a run's start-up, so each
thread keeps one supervisor started ahead (``prestart``; see supervisor_start.py).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path

from mlguild.core.execution import STDERR_TAIL_BYTES, STDOUT_TAIL_BYTES, ExecResult, Limits
from mlguild.sandbox import procfs
from mlguild.sandbox import supervisor as _sup
from mlguild.sandbox.base import classify
from mlguild.sandbox.plan import Plan, restore_workdir
from mlguild.sandbox.supervisor_start import Spare, send_nowait, start_supervisor
from mlguild.sandbox.sweep import kill_session, kill_tree
from mlguild.sandbox.tree import SWEEP_LIMIT_S
from mlguild.util import pysource


class SupervisedSandbox(ABC):
    """Base of every layer: ``run`` is the contract; subclasses implement ``plan``."""

    layer = "?"
    strong = False  # True: the layer isolates filesystem, network and processes

    def __init__(self, slack_s: float = SWEEP_LIMIT_S + _sup.DRAIN_LIMIT_S + 5.0, prestart: bool = True):
        """``slack_s``: how long past timeout + grace the agent waits for the supervisor
        (which itself needs at most its sweep and drain limits) before forcing it.
        ``prestart``: keep a supervisor started ahead for the thread's next run (module
        docstring); False starts each one on demand (~12 ms more per run)."""
        self.slack_s = slack_s
        self.prestart = prestart
        self._spares = threading.local()

    def __getstate__(self) -> dict:  # copies and pickles (e.g. to a worker) start without spares
        return {k: v for k, v in self.__dict__.items() if k != "_spares"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._spares = threading.local()

    @abstractmethod
    def plan(self, argv: list[str], cwd: Path, env: dict[str, str], limits: Limits, data_dir: Path | None) -> Plan:
        """What to run for this script (argv/env already the layer's own copies)."""

    def run(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        limits: Limits,
        stdout_path: Path,
        stderr_path: Path,
        data_dir: Path | None = None,
    ) -> ExecResult:
        """Run ``argv`` in ``cwd`` with ``env``; block until it and every process it started
        are gone; return what happened. Output goes to the two paths (created or
        truncated; they must not be links). ``data_dir``: the read-only input directory
        (default: ``env["MLGUILD_DATA"]`` when that is a directory); the script finds it
        in ``MLGUILD_DATA``, set here (the namespace layer shows it at /data). Never
        raises for anything the script does; raises ValueError for invalid limits or a
        ``data_dir`` that contains ``cwd`` (it would expose the whole run), and
        re-raises KeyboardInterrupt after killing the script.

        Afterwards ``cwd`` holds whatever the script left there, links to anywhere
        included: the caller must not follow links when it reads or writes there
        (temp files created with O_EXCL, outputs checked to be plain files)."""
        limits.validate()
        cwd = Path(cwd).absolute()
        stdout_path, stderr_path = Path(stdout_path).absolute(), Path(stderr_path).absolute()
        for p in (stdout_path, stderr_path):
            p.parent.mkdir(parents=True, exist_ok=True)
        if data_dir is None and os.path.isdir(env.get("MLGUILD_DATA", "")):
            data_dir = Path(env["MLGUILD_DATA"])  # callers that only set the variable
        data_dir = Path(data_dir).resolve() if data_dir is not None else None
        real_cwd = cwd.resolve()
        if data_dir is not None and (real_cwd == data_dir or data_dir in real_cwd.parents):
            raise ValueError(f"data_dir {data_dir} contains the working directory {cwd}")
        t0 = time.monotonic()
        plan = self.plan([str(a) for a in argv], cwd, dict(env), limits, data_dir)
        try:
            spec = {
                "argv": plan.argv,
                "cwd": str(cwd),
                "env": {str(k): str(v) for k, v in plan.env.items()},
                "stdout_path": str(stdout_path),
                "stderr_path": str(stderr_path),
                "agent_pid": os.getpid(),
                "rlimits": plan.rlimits,
                "cpus": list(limits.cpus) if limits.cpus else None,
                "notes": plan.notes,
                "limits": {
                    "timeout_s": limits.timeout_s,
                    "term_grace_s": limits.term_grace_s,
                    "tree_memory_mb": limits.tree_memory_mb,
                    "tree_procs": limits.tree_procs,
                    "disk_mb": limits.disk_mb,
                    "max_files": limits.max_files,
                    "output_bytes": limits.output_bytes,
                },
                **plan.spec,
            }
            raw = self._supervise(spec, limits)
        finally:
            restore_workdir(plan.granted)
        return _to_result(raw, stdout_path, stderr_path, time.monotonic() - t0, self.layer)

    def _start_spare(self) -> None:
        """Start the supervisor for this thread's next run (module docstring)."""
        try:
            self._spares.spare = Spare()
        except OSError:
            pass  # the next run starts its own

    def _supervise(self, spec: dict, limits: Limits) -> dict:
        """Start the supervisor on ``spec`` and return its raw result (or an error one)."""
        spare = getattr(self._spares, "spare", None)
        self._spares.spare = None
        proc = spare.take() if spare is not None else None
        if proc is None:
            try:
                proc = start_supervisor()
            except OSError as exc:
                return {"error": f"could not start the supervisor: {exc}"}

        safety_s = limits.timeout_s + limits.term_grace_s + self.slack_s
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            rest = send_nowait(proc, marshal.dumps(spec))
            if self.prestart:
                self._start_spare()  # it boots while this run goes on
            out, err, note, killed = _wait(proc, rest, safety_s, self.slack_s)
        except BaseException:  # KeyboardInterrupt, SystemExit: leave nothing running
            _stop(proc, self.slack_s)
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
        events = _parse_events(out)
        raw = events.get("result")
        if raw is None or proc.returncode != 0 or note:
            # The supervisor died, hung or was held: its main process died with it
            # (PDEATHSIG); kill what is left in that process's session.
            started = events.get("started") or {}
            if started.get("pid"):
                kill_session(int(started["pid"]))
                killed.discard(int(started["pid"]))  # the main script is not a descendant
            for init in (events.get("wrapped") or {}).get("init", []):
                kill_session(int(init))  # bwrap's init leads its own session; its end is the namespace's
            detail = note or f"supervisor exited with {proc.returncode}"
            tail = err.decode("utf-8", "replace").strip()[-2000:]
            raw = {**(raw or {}), "error": f"{detail}{': ' + tail if tail else ''}"}
            if killed:
                raw["descendants_killed"] = len(killed)
        return raw


WATCH_S = 0.25  # how often the agent checks that its supervisor is not held stopped
_RUNNING: set[subprocess.Popen] = set()  # supervisors running a script now, from any thread
_RUNNING_LOCK = threading.Lock()


def stop_running_scripts() -> int:
    """Ask every supervisor that runs a script for this process now to stop it (SIGTERM: it
    ends the script's whole tree and reports), so that a run interrupted while other threads
    wait on their scripts (mlguild.run.workers) ends at once. How many were asked."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for proc in running:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGTERM)
    return len(running)


def _wait(
    proc: subprocess.Popen,
    rest: bytes | None,
    safety_s: float,
    slack_s: float,
) -> tuple[bytes, bytes, str, set[int]]:
    """Wait for the supervisor's output and exit: (stdout, stderr, what went wrong, the
    pids the agent had to kill itself).

    The supervisor is checked every WATCH_S: one seen stopped or in a ptrace stop twice in
    a row (a script sharing its uid sent it SIGSTOP, or got to ptrace it) cannot sweep or
    report, so the agent kills the script's whole tree itself, then the supervisor, at
    once instead of at the safety timer. Past ``safety_s`` a hung supervisor is stopped."""
    end = time.monotonic() + safety_s
    seen_held = ""
    while True:
        try:
            out, err = proc.communicate(rest, timeout=max(0.0, min(WATCH_S, end - time.monotonic())))
            return out, err, "", set()
        except subprocess.TimeoutExpired:
            rest = None  # communicate() keeps what it read and what it has yet to write
        if time.monotonic() >= end:
            out, err = _stop(proc, slack_s)
            return out, err, f"supervisor did not finish within {safety_s:.0f} s; killed it", set()
        why = procfs.held(proc.pid)
        if why and seen_held:
            killed = kill_tree(proc.pid)
            proc.kill()  # SIGKILL ends a stopped or traced process too
            out, err = _collect(proc, slack_s)
            what = f"the supervisor was {why} (a script that shares its uid?); killed it and the script's processes"
            return out, err, what, killed
        seen_held = why


def _collect(proc: subprocess.Popen, wait_s: float) -> tuple[bytes, bytes]:
    """The output of a supervisor that was killed; gives up on reaping it after ``wait_s``
    (a tracer outside the tree can hold a dead process's exit status)."""
    try:
        return proc.communicate(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return b"", b""


def _stop(proc: subprocess.Popen, wait_s: float) -> tuple[bytes, bytes]:
    """Ask the supervisor to sweep and stop (SIGTERM); if it won't, kill the script's tree
    and the supervisor's group."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)  # in case the script SIGSTOPped it
        return proc.communicate(timeout=wait_s)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)  # while the supervisor lives, its orphans cannot leave its tree
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return _collect(proc, wait_s)


def _parse_events(out: bytes) -> dict[str, dict]:
    """The supervisor's event lines (Python literals), by event name (the last of each kind wins)."""
    events: dict[str, dict] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            obj = pysource.literal_eval(line)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event"), str):
            events[obj["event"]] = obj
    return events


def _tail(path: Path, nbytes: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - nbytes))
            data = f.read()
    except OSError:
        return ""
    # the cut may land inside a UTF-8 character: skip its continuation bytes
    start = 0
    while start < min(len(data), 3) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def _to_result(raw: dict, stdout_path: Path, stderr_path: Path, elapsed: float, layer: str) -> ExecResult:
    stderr_tail = _tail(stderr_path, STDERR_TAIL_BYTES)
    status, reason = classify(raw, stderr_tail)
    problems = []
    if raw.get("leftover"):
        problems.append(f"{raw['leftover']} process(es) would not die (uninterruptible?)")
    if raw.get("undrained"):
        problems.append("an output pipe stayed open after every process was killed")
    if problems:
        reason += "; " + "; ".join(problems)
    return ExecResult(
        status=status,
        exit_code=raw.get("exit_code"),
        signal=raw.get("signal"),
        duration_s=float(raw.get("duration_s", elapsed)),
        timed_out=bool(raw.get("timed_out")),
        memory_exceeded=bool(raw.get("memory_exceeded")),
        peak_tree_rss_mb=float(raw.get("peak_tree_rss_mb", 0.0)),
        stdout_truncated=bool(raw.get("stdout_truncated")),
        stderr_truncated=bool(raw.get("stderr_truncated")),
        stdout_tail=_tail(stdout_path, STDOUT_TAIL_BYTES),
        stderr_tail=stderr_tail,
        descendants_killed=int(raw.get("descendants_killed", 0)),
        disk_exceeded=bool(raw.get("disk_exceeded")),
        procs_exceeded=bool(raw.get("procs_exceeded")),
        peak_disk_mb=float(raw.get("peak_disk_mb", 0.0)),
        layer=layer,
        run_uid=raw.get("run_uid"),
        notes="; ".join(raw.get("notes") or []),
        reason=reason,
    )


__all__ = ["SupervisedSandbox", "stop_running_scripts"]
