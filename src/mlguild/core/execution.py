"""The sandbox's typed vocabulary: what a caller asks for (Limits) and gets back (ExecResult).

Every sandbox layer (the always-on local layer, the bubblewrap namespace layer) takes the
same Limits and returns the same ExecResult, so the loop never needs to know which layer
ran a script (``ExecResult.layer`` and ``run_uid`` record it for the journal). They live in
``core`` because the ``Sandbox`` protocol (``core.protocols``) speaks them; ``mlguild.sandbox``
implements it.
"""

from __future__ import annotations

import math
import os
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
    WORKER_LOST = "worker_lost"  # the Ray worker or node running it died (mlguild.run.ray_workers)


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
    host: str = ""  # where it ran when not in this process's sandbox: "HOST (Ray node ID)"; "" here

    def to_dict(self) -> dict:
        """A JSON-ready dict (status as its string value)."""
        d = asdict(self)
        d["status"] = self.status.value
        return d


STDOUT_TAIL_BYTES = 4096
STDERR_TAIL_BYTES = 8192
