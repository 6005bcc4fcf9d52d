"""How a script run ended, from the supervisor's raw facts: ``classify`` gives the status
(``core.execution.ExecStatus``) and a one-line reason."""

from __future__ import annotations

import re
import signal as _signal

from mlguild.core.execution import ExecStatus

# Out-of-memory as seen from inside the script: Python's MemoryError (numpy's
# _ArrayMemoryError is a subclass and prints that name), C++ bad_alloc, and ENOMEM from
# fork/mmap. Matched only on a failed exit, so a script that caught one and went on is ok.
_OOM_RE = re.compile(r"MemoryError|std::bad_alloc|Cannot allocate memory")


def classify(raw: dict, stderr_tail: str) -> tuple[ExecStatus, str]:
    """Turn the supervisor's raw facts into a status and a one-line reason.

    Precedence: the sandbox failing beats everything; then the kill we decided on
    (memory, process and disk caps, wall clock), because it explains the exit that
    followed; then what the script did to itself (CPU rlimit, MemoryError, other crashes).
    """
    if raw.get("error"):
        return ExecStatus.SANDBOX_ERROR, f"sandbox failed: {raw['error']}"
    code, sig = raw.get("exit_code"), raw.get("signal")
    if raw.get("memory_exceeded"):
        return ExecStatus.MEMORY, (
            f"process tree used {raw.get('peak_tree_rss_mb', 0):.0f} MiB, over the "
            f"{raw.get('tree_memory_mb')} MiB cap; killed"
        )
    if raw.get("procs_exceeded"):
        return ExecStatus.PROCS, (f"process tree passed {raw.get('tree_procs')} live processes (fork bomb?); killed")
    if raw.get("disk_exceeded"):
        return ExecStatus.DISK, (
            f"working directory passed its cap ({raw.get('disk_mb')} MiB, "
            f"{raw.get('max_files')} files): {raw.get('disk_seen', '')}; killed"
        )
    if raw.get("timed_out"):
        return ExecStatus.TIMEOUT, f"wall-clock timeout after {raw.get('timeout_s')} s; killed"
    if sig == _signal.SIGXCPU:
        return ExecStatus.TIMEOUT, "CPU-time limit (RLIMIT_CPU) reached"
    failed = code != 0
    if failed and _OOM_RE.search(stderr_tail):
        return ExecStatus.MEMORY, "script ran out of memory (MemoryError / ENOMEM)"
    if sig is not None:
        return ExecStatus.CRASH, f"killed by signal {_signal_name(sig)}"
    if failed:
        return ExecStatus.CRASH, f"exit code {code}"
    return ExecStatus.OK, "exit code 0"


def _signal_name(sig: int) -> str:
    try:
        return _signal.Signals(sig).name
    except ValueError:
        return str(sig)
