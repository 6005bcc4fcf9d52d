"""What a layer prepares for the supervisor before a script runs: the plan (argv, env,
rlimits, spec additions), the rlimits a script's processes get, the uid it drops to, the
interpreter's import paths a layer must let it read, and the working directory's grant to
the script's group (and its undoing). runner.py runs the plan."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mlguild.core.execution import Limits

MIB = 1024 * 1024


@dataclass
class Plan:
    """What a layer wants run: the supervisor's main argv/env plus spec additions."""

    argv: list[str]
    env: dict[str, str]
    rlimits: dict[str, tuple[int, int]]
    spec: dict = field(default_factory=dict)  # "drop", "wrapped", "run_uid"
    notes: list[str] = field(default_factory=list)  # isolation asked for and not applied
    granted: list = field(default_factory=list)  # directory modes to restore afterwards


def rlimits_for(limits: Limits, dropping: bool) -> dict[str, tuple[int, int]]:
    """The (soft, hard) rlimits the script's processes get, by RLIMIT_ name.

    ``dropping``: the script will run under a dedicated uid, where RLIMIT_NPROC works.
    It counts threads too (OpenBLAS starts one per core in every process), so its
    default is a pid-exhaustion backstop, not the process cap: the larger of 4096,
    32 per CPU and ``tree_procs``; ``limits.nproc`` sets it exactly.
    """
    cpu = limits.effective_cpu_s()
    # soft < hard: SIGXCPU first (reported as a timeout), SIGKILL if it is ignored
    out = {"CPU": (cpu, cpu + 5), "CORE": (0, 0)}
    if limits.fsize_mb:
        out["FSIZE"] = (limits.fsize_mb * MIB,) * 2
    if limits.nofile:
        out["NOFILE"] = (limits.nofile,) * 2
    if limits.memory_mb:
        out["AS"] = (limits.memory_mb * MIB,) * 2
    nproc = limits.nproc
    if nproc is None and dropping:
        nproc = max(4096, 32 * (os.cpu_count() or 1), limits.tree_procs or 0)
    if nproc:
        out["NPROC"] = (nproc,) * 2
    return out


def drop_target(limits: Limits) -> tuple[int, int] | None:
    """The (uid, gid) to run the script as, or None when no drop is wanted or needed."""
    if os.geteuid() != 0 or limits.run_as_uid is None:
        return None
    gid = limits.run_as_gid if limits.run_as_gid is not None else limits.run_as_uid
    return limits.run_as_uid, gid


def python_paths() -> list[str]:
    """Where the running interpreter imports from: its prefixes and every absolute
    ``sys.path`` entry that exists (site-packages, editable installs, the stdlib zip), each
    also where its links lead: a folder bound whole (a Ray worker's current directory is on
    its path) shows a link in it as a link, which needs its target bound too."""
    seen: list[str] = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path]
    for p in candidates:
        if p and os.path.isabs(p) and os.path.exists(p):
            for path in (os.path.normpath(p), os.path.realpath(p)):
                if path not in seen:
                    seen.append(path)
    return seen


def grant_workdir(cwd: Path, gid: int) -> list[tuple[str, int, int]]:
    """Let group ``gid`` create files in ``cwd`` but not remove or replace the harness's.

    Group rwx plus the sticky bit: the script may add files and delete its own, while
    the harness's files there (solution.py, plan.md, stdout.txt) stay ours. Returns what
    ``restore_workdir`` needs; raises OSError if the filesystem refuses.
    """
    fd = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        os.fchown(fd, -1, gid)
        os.fchmod(fd, (st.st_mode & 0o7777) | 0o1070)
    finally:
        os.close(fd)
    return [(str(cwd), st.st_mode & 0o7777, st.st_gid)]


def restore_workdir(saved: list[tuple[str, int, int]]) -> None:
    """Undo ``grant_workdir`` (the script's own files keep its uid)."""
    for path, mode, gid in saved:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            os.fchown(fd, -1, gid)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


__all__ = ["MIB", "Plan", "drop_target", "grant_workdir", "python_paths", "restore_workdir", "rlimits_for"]
