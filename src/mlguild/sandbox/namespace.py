"""What bubblewrap is told: the mounts a script sees (``Binds``: explicit, read-only unless
said otherwise, never one that contains the run directory) and the isolation flags
(``namespace_args``). bwrap.py says what this layer covers and runs it.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# What a Python script needs from /etc: name service files without secrets, the dynamic
# linker's cache, time zone, alternatives (BLAS), fonts and CA certificates.
ETC_ALLOW = (
    "passwd",
    "group",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "alternatives",
    "os-release",
    "debian_version",
    "fonts",
    "ssl",
    "ca-certificates",
    "mime.types",
    "gai.conf",
)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class Binds:
    """Accumulates bwrap mount arguments: parents created 0755 (bwrap would make them
    0700, unreadable to a dropped uid), nothing bound twice, nothing that contains a
    forbidden path."""

    def __init__(self, forbidden: list[str]):
        self.args: list[str] = []
        self.bound: list[str] = []
        self.dirs: set[str] = {"/"}
        self.forbidden = [os.path.realpath(f) for f in forbidden]
        self.skipped: list[str] = []

    def covered(self, dest: str) -> bool:
        return any(_under(dest, b) for b in self.bound)

    def parents(self, dest: str) -> None:
        parts = Path(dest).parents
        for parent in reversed([str(p) for p in parts]):
            if parent not in self.dirs and not self.covered(parent):
                self.args += ["--perms", "0755", "--dir", parent]
                self.dirs.add(parent)

    def bind(self, src: str, dest: str | None = None, how: str = "--ro-bind") -> None:
        src = os.path.normpath(src)
        dest = os.path.normpath(dest or src)
        if not os.path.exists(src) or self.covered(dest):
            return
        real = os.path.realpath(src)
        if any(_under(f, real) for f in self.forbidden):
            self.skipped.append(src)  # it holds the run directory: never expose siblings
            return
        self.parents(dest)
        self.args += [how, src, dest]
        self.bound.append(dest)

    def system(self, path: str) -> None:
        """A top-level system path, mirrored: a symlink stays a symlink (/lib -> usr/lib)."""
        if os.path.islink(path):
            self.parents(path)
            self.args += ["--symlink", os.readlink(path), path]
            self.bound.append(path)
        else:
            self.bind(path)

    def etc(self) -> None:
        self.args += ["--perms", "0755", "--dir", "/etc"]
        self.dirs.add("/etc")
        for name in ETC_ALLOW:
            path = f"/etc/{name}"
            if os.path.islink(path):
                self.args += ["--symlink", os.readlink(path), path]
                self.bound.append(path)
            else:
                self.bind(path)


def namespace_args(root: bool, drop: bool) -> list[str]:
    """The isolation flags: every namespace, no capabilities.

    No ``--die-with-parent``: with it, bwrap's namespace init dies when bwrap exits, right
    after the script's main process, and the kernel kills what the script left behind
    before the supervisor's sweep can see it, so the sweep could not say how many there
    were. Without it the init outlives bwrap while the namespace has processes, becomes
    the supervisor's child (a subreaper), and dies by the sweep, or with the supervisor's
    session (sweep.kill_session) if the supervisor itself is killed."""
    args = ["--new-session"]
    if root:
        # No user namespace: bwrap's root path keeps the real uid 0, so that setpriv can
        # switch to a real unprivileged uid (in a user namespace only uid 0 is mapped).
        args += [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
        ]
        if drop:  # only for setpriv, which gives them up before the script starts
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    else:
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    return args + ["--hostname", "sandbox"]


def system_binds(binds: Binds) -> None:
    for path in SYSTEM_DIRS:
        if os.path.lexists(path):
            binds.system(path)
    binds.etc()


def gpu_devices() -> list[str]:
    """The GPU device nodes of this machine (NVIDIA and DRM), if any."""
    found = sorted(glob.glob("/dev/nvidia*"))
    if os.path.exists("/dev/dri"):
        found.append("/dev/dri")
    return found
