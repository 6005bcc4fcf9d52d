"""The script's process tree, as the supervisor sees it: who belongs to the run (our
descendants, less bubblewrap and its namespace init when wrapped), reaping, signalling and
the final sweep, and the sampled caps (memory, processes, disk of the working directory).

Stdlib only, like supervisor.py, which imports it by its plain name when started with -I.
"""

from __future__ import annotations

import _signal as signal  # the C module: ``signal`` imports enum (~5 ms of every start)
import os
import time

if __package__:
    from . import procfs
else:  # imported by supervisor.py started with -I, which put our directory on sys.path
    import procfs  # type: ignore[no-redef]  # the same module by its plain name, not a second one

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
SWEEP_LIMIT_S = 5.0  # a process stuck in uninterruptible sleep must not hang us forever


class Run:
    """State of one supervised run; ``main`` is the first process we started."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.me = os.getpid()
        self.main = -1
        self.wrapped = bool(spec.get("wrapped"))
        self.wrappers: set[int] = set()  # bwrap and its namespace init (found by learn_wrapped)
        self.script_main: int | None = None
        self.ns_depth = len(procfs.ns_pids(self.me) or [0]) if self.wrapped else 0
        self.ns_seen: set[int] = set()
        self.main_status: int | None = None
        self.main_end = 0.0
        self.signalled: set[int] = set()
        self.peak_rss = 0
        self.peak_disk = 0
        self.disk_seen = ""
        self.timed_out = False
        self.memory_exceeded = False
        self.procs_exceeded = False
        self.disk_exceeded = False
        self.stop_signal: int | None = None
        self.leftover = 0

    def reap(self) -> bool:
        """Reap every exited child; record the main process's status. False: no children left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.main:
                self.main_status, self.main_end = status, time.monotonic()

    def tree(self) -> tuple[dict, list[int]]:
        """A /proc snapshot and our live descendants; learns the wrapper pids on the way."""
        table = procfs.proc_table()
        live = [p for p in procfs.descendants(self.me, table) if table[p][3] != b"Z"]
        if self.wrapped and (self.script_main is None or len(self.wrappers) < 2):
            self.learn_wrapped(table, live)
        return table, live

    def learn_wrapped(self, table: dict, live: list[int]) -> None:
        """Find bwrap's namespace init and the script's main process among ``live``.

        By their pids in the namespace bwrap made (1 and 2), not by their parents: bwrap
        exits as soon as the script's main process does, and its init (which outlives it
        while anything else runs in the namespace) is then our child, like any orphan.
        Only children of bwrap, of us and of the init are read, each once."""
        self.wrappers.add(self.main)
        for _ in range(2):  # the init, then its child, in whatever order /proc lists them
            parents = self.wrappers | {self.me}
            for p in live:
                if p in self.ns_seen or table[p][0] not in parents:
                    continue
                self.ns_seen.add(p)
                ids = procfs.ns_pids(p)
                if ids is None:  # no NSpid (Linux < 4.1): bwrap's only child is its init
                    if table[p][0] == self.main:
                        self.wrappers.add(p)
                elif len(ids) == self.ns_depth + 1 and ids[-1] == 1:
                    self.wrappers.add(p)
                elif len(ids) == self.ns_depth + 1 and ids[-1] == 2:
                    # the script's own main process: not a "descendant killed" when it
                    # dies, as in the unwrapped case
                    self.script_main = p

    def learn_init(self) -> None:
        """Find bwrap's namespace init among bwrap's children (one small read, no /proc
        walk); learn_wrapped does the same from a full scan."""
        self.wrappers.add(self.main)
        for child in procfs.children(self.main):
            ids = procfs.ns_pids(child)
            if ids is not None and len(ids) == self.ns_depth + 1 and ids[-1] == 1:
                self.wrappers.add(child)
                self.ns_seen.add(child)

    def signal_tree(self, sig: int, spare_wrappers: bool = False) -> int:
        """Send ``sig`` to every live descendant; return how many were signalled.

        Whole process groups first: killpg is atomic against a fork in flight (the kernel
        restarts a fork that races a group signal), so a fork loop that stays in its group
        dies in one round however slow the /proc scan is. Every group here lives in a
        session the script (or bwrap) created, so it holds only descendants. Then each
        pid, for those that left their group. bwrap and its namespace init come last
        (never by their group): killing the init ends the namespace, and the kernel would
        kill what is left in it before we could count it. ``spare_wrappers``: leave them
        alone, so the script gets its SIGTERM grace.
        """
        table, live = self.tree()
        wrappers = [p for p in live if p in self.wrappers]
        targets = [p for p in live if p not in self.wrappers]
        groups = {table[p][1] for p in targets} - {table[p][1] for p in self.wrappers if p in table}
        hit = set()
        for pgid in groups - {os.getpgid(0)}:
            try:
                os.killpg(pgid, sig)
                hit.add(pgid)
            except ProcessLookupError:
                pass
        for pid in targets + ([] if spare_wrappers else wrappers):
            # pid reuse between the scan and the kill would need the pid space to wrap in
            # those microseconds; zombies we have not reaped cannot be reused at all.
            try:
                os.kill(pid, sig)
                self.signalled.add(pid)
            except ProcessLookupError:
                if table[pid][1] in hit:  # its group's signal got there first, and bwrap's
                    self.signalled.add(pid)  # init (not we) already reaped it
        return len(targets) + (0 if spare_wrappers else len(wrappers))

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

    def check_tree(self, mem_cap: int | None, procs_cap: int | None) -> None:
        """Sample the tree's memory (kept as the peak even with no cap) and size; kill it
        over either cap."""
        table, live = self.tree()
        pids = [p for p in live if p not in self.wrappers]
        if procs_cap and len(pids) > procs_cap:
            self.procs_exceeded = True
            self.sweep()
            return
        total = sum(table[p][4] for p in live) * PAGE
        if mem_cap and total > mem_cap:
            # RSS counts a page shared by N forked workers N times; PSS splits it.
            total = sum(procfs.pss_bytes(p) for p in live)
        self.peak_rss = max(self.peak_rss, total)
        if mem_cap and total > mem_cap:
            self.memory_exceeded = True
            self.sweep()

    def check_disk(self, root: str, cap_bytes: int | None, cap_files: int | None) -> float:
        """Measure the working directory; kill the tree over a cap. Returns the walk's time."""
        t0 = time.monotonic()
        used, files = procfs.dir_usage(root, cap_bytes, cap_files)
        self.peak_disk = max(self.peak_disk, used)
        if (cap_bytes is not None and used > cap_bytes) or (cap_files is not None and files > cap_files):
            self.disk_exceeded = True
            self.disk_seen = f"{used / MIB:.0f} MiB in {files} entries (counting stopped there)"
            self.sweep()
        return time.monotonic() - t0
