"""The sandbox's typed vocabulary: what a caller asks for (Limits) and gets back (ExecResult).

Every sandbox layer (the always-on local layer, the bubblewrap namespace layer) takes the
same Limits and returns the same ExecResult, so the loop never needs to know which layer
ran a script (``ExecResult.layer`` and ``run_uid`` record it for the journal).
"""

from __future__ import annotations

import math
import os
import re
import signal as _signal
from dataclasses import asdict, dataclass
from enum import Enum

# Defaults of the limits a user may configure, said once: ``Limits`` and the
# ``sandbox`` section of the configuration both take theirs from here.
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MEMORY_MB: int | None = None
DEFAULT_TREE_MEMORY_MB = 8192
DEFAULT_FSIZE_MB = 2048
DEFAULT_NOFILE = 1024
DEFAULT_TREE_PROCS = 1024
DEFAULT_DISK_MB = 4096
DEFAULT_MAX_FILES = 100_000
DEFAULT_TMP_MB = 1024
DEFAULT_RUN_AS_UID: int | None = 65534
DEFAULT_OUTPUT_BYTES = 2_000_000


@dataclass
class Limits:
    """Resource limits for one script run. ``None`` means "off" unless said otherwise."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    """Wall-clock limit; on expiry every process of the script gets SIGTERM, then SIGKILL."""
    term_grace_s: float = 1.0
    """Seconds between the SIGTERM and the SIGKILL of a timed-out script."""
    cpu_s: int | None = None
    """RLIMIT_CPU per process, all threads summed. None: 2 x timeout x CPU count, a backstop
    that never fires before the wall clock (16 threads burn 16 CPU-seconds per second)."""
    memory_mb: int | None = DEFAULT_MEMORY_MB
    """RLIMIT_AS per process, in MiB. Off by default: CUDA, JAX and OpenBLAS reserve huge
    virtual ranges they never touch, so an address-space cap kills honest scripts."""
    tree_memory_mb: int | None = DEFAULT_TREE_MEMORY_MB
    """Cap on the resident memory of the whole process tree (sampled ~every 150 ms)."""
    fsize_mb: int | None = DEFAULT_FSIZE_MB
    """RLIMIT_FSIZE: the largest single file a script may write, in MiB (not total disk)."""
    nofile: int | None = DEFAULT_NOFILE
    """RLIMIT_NOFILE: open file descriptors per process."""
    nproc: int | None = None
    """RLIMIT_NPROC: processes AND threads per uid, machine-wide. The kernel ignores it for
    root. None: under a dropped uid (see ``run_as_uid``) a pid-exhaustion backstop of
    max(4096, 32 per CPU, tree_procs); otherwise unset."""
    tree_procs: int | None = DEFAULT_TREE_PROCS
    """Cap on live processes in the script's tree (sampled with the memory); a fork bomb
    is killed when it passes it (status ``procs``). The only fork cap for a root script."""
    disk_mb: int | None = DEFAULT_DISK_MB
    """Cap on the disk used under the working directory (sampled; status ``disk``)."""
    max_files: int | None = DEFAULT_MAX_FILES
    """Cap on the number of files and directories under the working directory."""
    tmp_mb: int = DEFAULT_TMP_MB
    """Size of the private /tmp and of /dev/shm, each, in the namespace layer (tmpfs: RAM)."""
    run_as_uid: int | None = DEFAULT_RUN_AS_UID
    """When the agent is root, run the script as this uid (so RLIMIT_NPROC and file
    permissions apply to it), if the layer can; None: never drop. ``ExecResult.run_uid``
    says what happened, ``ExecResult.notes`` why a drop was not possible."""
    run_as_gid: int | None = None
    """The gid that goes with ``run_as_uid`` (None: the same number as the uid)."""
    output_bytes: int = DEFAULT_OUTPUT_BYTES
    """Bytes kept per stream (head half + tail half); the middle of a flood is dropped."""
    cpus: tuple[int, ...] | None = None
    """The CPUs the script's processes may run on (its affinity, inherited by every process
    it starts); None: all of the agent's. Several workers pin their scripts apart."""

    def effective_cpu_s(self) -> int:
        """The RLIMIT_CPU value actually applied (resolves the ``None`` default)."""
        if self.cpu_s is not None:
            return int(self.cpu_s)
        return math.ceil(2 * self.timeout_s * (os.cpu_count() or 1))

    def validate(self) -> None:
        """Raise ValueError on a limit that cannot be applied (checked before anything starts)."""
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.term_grace_s < 0:
            raise ValueError(f"term_grace_s must be >= 0, got {self.term_grace_s}")
        if self.output_bytes < 1024:
            raise ValueError(f"output_bytes must be >= 1024, got {self.output_bytes}")
        if self.tmp_mb <= 0:
            raise ValueError(f"tmp_mb must be positive, got {self.tmp_mb}")
        for name in ("run_as_uid", "run_as_gid"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value}")
        names = (
            "cpu_s",
            "memory_mb",
            "tree_memory_mb",
            "fsize_mb",
            "nofile",
            "nproc",
            "tree_procs",
            "disk_mb",
            "max_files",
        )
        for name in names:
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")


class ExecStatus(str, Enum):  # noqa: UP042 (str() of a member must stay as it is for old records)
    """How a run ended, from the harness's point of view."""

    OK = "ok"  # main script exited 0 (its leftover children, if any, were killed)
    CRASH = "crash"  # nonzero exit, or killed by a signal we did not send
    TIMEOUT = "timeout"  # wall clock (or the RLIMIT_CPU backstop) ran out
    MEMORY = "memory"  # tree RSS cap hit, or the script died of MemoryError / ENOMEM
    DISK = "disk"  # the working directory passed disk_mb or max_files; killed
    PROCS = "procs"  # the process tree passed tree_procs (a fork bomb); killed
    SANDBOX_ERROR = "sandbox_error"  # the sandbox itself failed: the script may never have run


@dataclass
class ExecResult:
    """What happened to one script run. Output itself lives in the stdout/stderr files."""

    status: ExecStatus
    exit_code: int | None  # None when the main process died of a signal (or never started)
    signal: int | None  # the signal that killed the main process, if any
    duration_s: float  # wall time from the script's start to its main process's end
    timed_out: bool = False  # the wall clock ran out and we killed the tree
    memory_exceeded: bool = False  # the tree RSS cap was passed and we killed the tree
    peak_tree_rss_mb: float = 0.0  # sampled tree peak; at least the largest process's own peak
    stdout_truncated: bool = False  # the middle of stdout was dropped (output_bytes)
    stderr_truncated: bool = False
    stdout_tail: str = ""  # last ~4 KB of stdout
    stderr_tail: str = ""  # last ~8 KB of stderr
    descendants_killed: int = 0  # processes alive when the main script ended, killed by the sweep
    disk_exceeded: bool = False  # the working directory passed disk_mb / max_files; tree killed
    procs_exceeded: bool = False  # the tree passed tree_procs live processes; tree killed
    peak_disk_mb: float = 0.0  # largest sampled disk use under the working directory
    layer: str = ""  # which sandbox layer ran the script ("local", "bwrap")
    run_uid: int | None = None  # the uid the script ran as (None: it never started)
    notes: str = ""  # isolation that was asked for but not applied, and why (empty: none)
    reason: str = ""  # one human-readable line: why the run ended this way

    def to_dict(self) -> dict:
        """A JSON-ready dict (status as its string value)."""
        d = asdict(self)
        d["status"] = self.status.value
        return d


STDOUT_TAIL_BYTES = 4096
STDERR_TAIL_BYTES = 8192

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


__all__ = [
    "DEFAULT_DISK_MB",
    "DEFAULT_FSIZE_MB",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_NOFILE",
    "DEFAULT_OUTPUT_BYTES",
    "DEFAULT_RUN_AS_UID",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TMP_MB",
    "DEFAULT_TREE_MEMORY_MB",
    "DEFAULT_TREE_PROCS",
    "STDERR_TAIL_BYTES",
    "STDOUT_TAIL_BYTES",
    "ExecResult",
    "ExecStatus",
    "Limits",
    "classify",
]
