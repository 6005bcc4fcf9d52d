"""The always-on sandbox layer: runs one untrusted script with the standard library only.

It works on any Linux machine with /proc, as root or not, with no packages and no
privileges to configure. Each claim below has an adversarial test in tests/test_sandbox.py.

COVERS (while the agent process is alive, and also when it is killed with SIGKILL):
- wall-clock timeout: SIGTERM to every process of the script, ``term_grace_s``, SIGKILL;
  a script that ignores SIGTERM still dies;
- no survivors: when the main script ends (exit, crash, timeout, memory), every process
  it started is killed and reaped before ``run`` returns, including setsid + double-fork
  daemons, many forked children and abandoned multiprocessing pools (the supervisor is a
  child subreaper, so orphans reparent to it and cannot hide from its /proc walk);
- the agent dying: the supervisor's PDEATHSIG is SIGTERM, which runs the same sweep;
- memory: the RSS of the whole tree is sampled every ~150 ms and the tree is killed over
  ``tree_memory_mb`` (status ``memory``); optional RLIMIT_AS per process (``memory_mb``);
- rlimits per process: RLIMIT_CPU (backstop), RLIMIT_FSIZE (largest single file),
  RLIMIT_NOFILE, RLIMIT_CORE=0 (no core dumps), optional RLIMIT_NPROC;
- output: stdout/stderr are read continuously into files that keep ``output_bytes`` per
  stream (head + tail, with a marker saying how many bytes were dropped), so a flood
  neither blocks the script nor fills the disk; a child holding the pipe open after the
  main script exits does not hang the run;
- environment: the script sees exactly the ``env`` it is given; ``safe_env`` builds an
  allowlist that never contains names like *KEY*, *TOKEN*, *SECRET*, *PASSWORD*.

DOES NOT COVER (the namespace layer, a later issue, is for these):
- network: the script can open any connection the machine can;
- the filesystem: the script reads and writes whatever its uid can. Sealed data is
  protected here only by never being on a path the script is told about;
- privilege: the script runs as the agent's uid (root on our machines). It can read the
  agent's memory and environment through /proc/<pid>/environ, kill the agent or the
  supervisor, ptrace, mount, or unshare. If it SIGKILLs the supervisor, the main script
  dies (PDEATHSIG) and the agent kills what is left in the script's session, but a
  process that also left that session escapes. This layer contains accidents and sloppy
  code; it is not a boundary against code written to attack it;
- RLIMIT_NPROC is ignored by the kernel for root, so there is no fork-bomb cap for root
  beyond the tree memory cap (each process costs RSS) and the sweep;
- total disk use: RLIMIT_FSIZE caps one file, not the number of files;
- memory between samples: a burst that allocates faster than the ~150 ms sampling can
  overshoot the cap before the kill (the kernel OOM killer is the last line);
- GPU memory and CPU share (no cgroups here).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlguild.errors import ConfigError
from mlguild.sandbox import supervisor as _sup
from mlguild.sandbox.base import (
    STDERR_TAIL_BYTES,
    STDOUT_TAIL_BYTES,
    ExecResult,
    ExecStatus,
    Limits,
    classify,
)

SUPERVISOR_PATH = Path(_sup.__file__).resolve()
MIB = 1024 * 1024

_SECRET_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_PASS_IF_SET = (
    "PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
    # thread counts the operator chose for this machine
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
    # OpenBLAS mis-detects some virtual CPUs and crashes without these
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
)


def safe_env(extra: dict[str, str] | None = None, cwd: Path | str | None = None) -> dict[str, str]:
    """Build the allowlisted environment for a script.

    Contains PATH, LANG, LC_ALL, TZ, TMPDIR, LD_LIBRARY_PATH and the thread / OpenBLAS
    variables when the agent has them set; HOME set to ``cwd`` (default: the current
    directory), PYTHONHASHSEED=0, PYTHONUNBUFFERED=1; then ``extra``. Raises ConfigError
    if ``extra`` has a name that looks like a secret (*KEY*, *TOKEN*, *SECRET*,
    *PASSWORD*): the script's environment is the one thing this layer can keep clean.
    """
    env = {name: os.environ[name] for name in _PASS_IF_SET if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("TMPDIR", tempfile.gettempdir())
    env["HOME"] = str(Path(cwd) if cwd is not None else Path.cwd())
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    for name, value in (extra or {}).items():
        if _SECRET_RE.search(name):
            raise ConfigError(
                f"refusing to pass {name!r} to a sandboxed script: it looks like a secret",
                fix="rename the variable, or give the script the value through a file it may read",
            )
        env[name] = str(value)
    return env


def rlimits_for(limits: Limits) -> dict[str, tuple[int, int]]:
    """The (soft, hard) rlimits the script's processes get, by RLIMIT_ name."""
    cpu = limits.effective_cpu_s()
    # soft < hard: SIGXCPU first (reported as a timeout), SIGKILL if it is ignored
    out = {"CPU": (cpu, cpu + 5), "CORE": (0, 0)}
    if limits.fsize_mb:
        out["FSIZE"] = (limits.fsize_mb * MIB,) * 2
    if limits.nofile:
        out["NOFILE"] = (limits.nofile,) * 2
    if limits.memory_mb:
        out["AS"] = (limits.memory_mb * MIB,) * 2
    if limits.nproc:
        out["NPROC"] = (limits.nproc,) * 2
    return out


class LocalSandbox:
    """Runs scripts under the stdlib supervisor (see the module docstring for the contract)."""

    name = "local"

    def __init__(self, slack_s: float = _sup.SWEEP_LIMIT_S + _sup.DRAIN_LIMIT_S + 5.0):
        """``slack_s``: how long past timeout + grace the agent waits for the supervisor
        (which itself needs at most its sweep and drain limits) before forcing it."""
        self.slack_s = slack_s

    def run(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        limits: Limits,
        stdout_path: Path,
        stderr_path: Path,
    ) -> ExecResult:
        """Run ``argv`` in ``cwd`` with exactly ``env``; block until it and every process it
        started are gone; return what happened. Output goes to the two paths (created or
        truncated). Never raises for anything the script does; raises ValueError for
        invalid limits, and re-raises KeyboardInterrupt after killing the script."""
        limits.validate()
        stdout_path, stderr_path = Path(stdout_path).absolute(), Path(stderr_path).absolute()
        for p in (stdout_path, stderr_path):
            p.parent.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": [str(a) for a in argv],
            "cwd": str(Path(cwd).absolute()),
            "env": {str(k): str(v) for k, v in env.items()},
            "stdout_path": str(stdout_path),
            "stderr_path": str(stderr_path),
            "agent_pid": os.getpid(),
            "rlimits": rlimits_for(limits),
            "limits": {
                "timeout_s": limits.timeout_s,
                "term_grace_s": limits.term_grace_s,
                "tree_memory_mb": limits.tree_memory_mb,
                "output_bytes": limits.output_bytes,
            },
        }
        t0 = time.monotonic()
        sup_env = {k: os.environ[k] for k in ("PATH", "LD_LIBRARY_PATH") if k in os.environ}
        try:
            # No preexec_fn: the agent may be multi-threaded, so the supervisor arms its
            # own PDEATHSIG and checks it was not orphaned before doing so.
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SUPERVISOR_PATH)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=sup_env, cwd="/", close_fds=True, start_new_session=True,
            )
        except OSError as exc:
            return _error_result(f"could not start the supervisor: {exc}", time.monotonic() - t0)

        safety_s = limits.timeout_s + limits.term_grace_s + self.slack_s
        note = ""
        try:
            out, err = proc.communicate(json.dumps(spec).encode(), timeout=safety_s)
        except subprocess.TimeoutExpired:
            out, err = _stop(proc, self.slack_s)
            note = f"supervisor did not finish within {safety_s:.0f} s; killed it"
        except BaseException:  # KeyboardInterrupt, SystemExit: leave nothing running
            _stop(proc, self.slack_s)
            raise
        events = _parse_events(out)
        raw = events.get("result")
        if raw is None or proc.returncode != 0 or note:
            # The supervisor died or hung: its script's main process died with it
            # (PDEATHSIG); kill what is left in that script's session.
            started = events.get("started") or {}
            if started.get("pid"):
                kill_session(int(started["pid"]))
            detail = note or f"supervisor exited with {proc.returncode}"
            tail = err.decode("utf-8", "replace").strip()[-2000:]
            raw = {**(raw or {}), "error": f"{detail}{': ' + tail if tail else ''}"}
        return _to_result(raw, stdout_path, stderr_path, time.monotonic() - t0)


def _stop(proc: subprocess.Popen, wait_s: float) -> tuple[bytes, bytes]:
    """Ask the supervisor to sweep and stop (SIGTERM); SIGKILL its group if it won't."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)  # in case the script SIGSTOPped it
        return proc.communicate(timeout=wait_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.communicate()


def kill_session(sid: int, limit_s: float = 2.0) -> int:
    """SIGKILL every process in session ``sid`` until none is left; return how many.

    The fallback when the supervisor itself is gone: the script's main process led that
    session, so its ordinary children are still in it (a child that called setsid is not).
    """
    killed: set[int] = set()
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        table = _sup.proc_table()
        live = [p for p, row in table.items() if row[2] == sid and row[3] != b"Z"]
        if not live:
            break
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    return len(killed)


def _parse_events(out: bytes) -> dict[str, dict]:
    """The supervisor's JSON lines, by event name (the last of each kind wins)."""
    events: dict[str, dict] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
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


def _to_result(raw: dict, stdout_path: Path, stderr_path: Path, elapsed: float) -> ExecResult:
    stderr_tail = _tail(stderr_path, STDERR_TAIL_BYTES)
    status, reason = classify(raw, stderr_tail)
    notes = []
    if raw.get("leftover"):
        notes.append(f"{raw['leftover']} process(es) would not die (uninterruptible?)")
    if raw.get("undrained"):
        notes.append("an output pipe stayed open after every process was killed")
    if notes:
        reason += "; " + "; ".join(notes)
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
        reason=reason,
    )


def _error_result(message: str, elapsed: float) -> ExecResult:
    return ExecResult(
        status=ExecStatus.SANDBOX_ERROR, exit_code=None, signal=None,
        duration_s=elapsed, reason=f"sandbox failed: {message}",
    )
