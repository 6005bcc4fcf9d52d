"""What the supervisor sees from outside: /proc, the disk, prctl, another uid's access.

Stdlib only and free of side effects on import: the supervisor (run by path with
``python -I -S``) imports it as a plain module, the agent as ``mlguild.sandbox.procfs``.
"""

from __future__ import annotations

import ctypes
import os
import stat

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
CAP_SYS_PTRACE = 19
_CAP_VERSION_3 = 0x20080522

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    """This process's libc, loaded on first use."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def prctl(option: int, arg: int) -> None:
    """Call prctl(2) with one argument; raise OSError on failure."""
    z = ctypes.c_ulong(0)
    if _lib().prctl(ctypes.c_int(option), ctypes.c_ulong(arg), z, z, z) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def drop_capability(cap: int) -> None:
    """Remove capability ``cap`` from this process for good: from the bounding set (so no
    later exec, even of a root or setuid program, grants it again) and from the effective,
    permitted and inheritable sets (ambient ones follow the inheritable set).

    Raises OSError when the kernel refuses (the bounding set needs CAP_SETPCAP)."""
    prctl(PR_CAPBSET_DROP, cap)
    libc = _lib()
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable} words
    if libc.capget(header, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    word, bit = divmod(cap, 32)
    for i in range(3):
        data[3 * word + i] &= ~(1 << bit) & 0xFFFFFFFF
    if libc.capset(header, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def children(pid: int) -> list[int]:
    """The children of ``pid``'s main thread (/proc/<pid>/task/<pid>/children); empty if it
    is gone or the kernel has no such file (CONFIG_PROC_CHILDREN)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def ns_pids(pid: int) -> list[int] | None:
    """The pids of ``pid`` in each PID namespace, from ours down to its own (NSpid in
    /proc/<pid>/status); None if it is gone or the kernel does not say (before 4.1)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return None


def held(pid: int) -> str:
    """Why ``pid`` cannot run on: "stopped" (SIGSTOP and friends), "traced by <pid>" (in a
    ptrace stop), or "" when it is running, sleeping, or gone."""
    state = tracer = b""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"State:"):
                    state = line.split()[1]
                elif line.startswith(b"TracerPid:"):
                    tracer = line.split()[1]
                    break
    except (OSError, IndexError):
        return ""
    if state == b"t" or (state == b"T" and tracer not in (b"", b"0")):
        return f"traced by pid {tracer.decode()}"
    return "stopped" if state == b"T" else ""


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


def dir_usage(root: str, max_bytes: int | None = None, max_files: int | None = None):
    """(bytes on disk, entries) under ``root``; stops counting once either cap is passed.

    Bytes are allocated blocks (a sparse file costs what it really uses), each inode
    once (hard links), symlinks never followed, other filesystems not entered (a script
    that mounted something there is not charged for it, and cannot make us walk it).
    Entries that vanish mid-walk are skipped: the script keeps running while we count.
    """
    try:
        dev = os.lstat(root).st_dev
    except OSError:
        return 0, 0
    total = files = 0
    seen: set[int] = set()
    todo = [root]
    while todo:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                files += 1
                if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                    if st.st_ino in seen:
                        continue
                    seen.add(st.st_ino)
                total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode) and st.st_dev == dev:
                    todo.append(entry.path)
                if (max_bytes is not None and total > max_bytes) or (max_files is not None and files > max_files):
                    return total, files
    return total, files


def access_problem(uid: int, gid: int, checks: list) -> str:
    """Fork a child that becomes ``uid``/``gid`` and checks ``[path, access-mode]`` pairs.

    For the single-threaded supervisor only (fork without exec).

    Returns "" when every check passed, else the first path that failed. A real switch,
    not a reading of mode bits: ACLs, parent directories and root squash all count.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the supervisor is single-threaded, so fork is safe
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            bad = next((p for p, mode in checks if not os.access(p, mode)), "")
            os.write(w, bad.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        bad = f.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return "(could not switch uid)"
    return bad
