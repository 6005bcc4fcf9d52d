"""The agent's own sweeps of a script's processes, for when its supervisor cannot sweep:
every live descendant of a held supervisor, or every process of a dead supervisor's session."""

from __future__ import annotations

import os
import signal
import time

from mlguild.sandbox import procfs


def kill_tree(root: int, limit_s: float = 5.0) -> set[int]:
    """SIGKILL every live descendant of ``root`` until none is left; return their pids.

    The agent's sweep, for a supervisor that cannot run its own: it is a child subreaper,
    so while it exists (stopped, traced or hung) every orphan of the script reparents to
    it and stays in this walk; a setsid daemon cannot leave it. Groups first, as in the
    supervisor's sweep, so a fork loop dies in one round."""
    killed: set[int] = set()
    spared = {os.getpgid(0), root}  # our group and the supervisor's (its pid: own session)
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        table = procfs.proc_table()
        live = [p for p in procfs.descendants(root, table) if table[p][3] != b"Z"]
        if not live:
            break
        for pgid in {table[p][1] for p in live} - spared:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.005)
    return killed


def kill_session(sid: int, limit_s: float = 2.0) -> int:
    """SIGKILL every process in session ``sid`` until none is left; return how many.

    The fallback when the supervisor itself is gone: the main process led that session,
    so its ordinary children are still in it (a child that called setsid is not). Under
    bwrap, the session of the namespace init the supervisor reported: killing the init
    ends the namespace, setsid daemons included.
    """
    killed: set[int] = set()
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        table = procfs.proc_table()
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
