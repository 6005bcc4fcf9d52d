"""The namespace layer: the always-on supervisor, with the script inside bubblewrap.

The supervisor stays OUTSIDE the sandbox (it runs ``bwrap ... -- script``): the script
cannot see, signal or outlive it, and it keeps the host's view of every process for its
caps and sweep. bwrap exits as soon as the main script does; its namespace init stays
while anything else runs inside, as the supervisor's child, so the sweep kills and counts
what the script left (``descendants_killed``, exact, as in the always-on layer) and then
the init, which ends the namespace. If the supervisor itself is killed, the agent kills
that init (the supervisor reports its pid early in each run), and the namespace with it.
Each claim below has an adversarial test in tests/adversarial/.

COVERS everything the always-on layer covers (local.py), plus:
- processes: own PID namespace; the agent, the supervisor and every other host process
  are invisible (no signal, no ptrace, no /proc/<pid>/environ, no /proc/<pid>/root);
- network: own network namespace whose only interface is its own loopback: no TCP,
  UDP, DNS, abstract unix socket or listening port reaches or is reachable from the host;
- filesystem, by explicit binds only: read-only /usr, /bin, /lib*, /sbin, /opt, a few
  named files of /etc (no shadow, no keys), the Python environment (prefixes and the
  absolute ``sys.path`` entries), pretrained weights from a user's torch or Hugging Face
  cache (``backbones.mounts()``) and the run's embeddings cache (``$MLGUILD_EMBEDDINGS``);
  the data directory read-only at ``/data`` (the script's
  ``MLGUILD_DATA``); ONE writable bind: the working directory. Sealed labels, the
  journal, the scorer and the rest of the run directory are never bound (not hidden
  under another mount: absent). No bind whose source contains the working directory or
  the data directory is ever made, so a sibling such as ``run/sealed`` cannot come along;
- private /tmp and /dev/shm, tmpfs capped at ``tmp_mb`` each; no IPC or UTS sharing;
- privilege: all capabilities dropped, no_new_privs; when the agent is root the script
  runs as ``run_as_uid`` (setpriv inside the namespace, after bwrap's setup), so
  RLIMIT_NPROC caps tasks in the kernel and the harness's files in the working directory
  (solution.py, stdout.txt) cannot be changed. Checked once per sandbox by a real probe;
  where the drop is impossible the script runs as a capability-less root and
  ``ExecResult.notes`` says so;
- environment: ``--clearenv`` and exactly the given variables (plus PWD, which bwrap
  sets on ``--chdir`` as a shell would);
- the binary: ``$MLGUILD_BWRAP`` when set, else ``bwrap`` on PATH (probe() says why one
  is unusable: missing, or failing here);
- GPU: /dev/nvidia* and /dev/dri are passed through when present (``gpu=None``), with
  /sys read-only for the driver's device enumeration.

DOES NOT COVER:
- the supervisor and the agent both SIGKILLed at once (the OOM killer, a ``kill -9`` of
  both): bwrap dies with the supervisor, but its namespace init, which no longer dies with
  bwrap, is left running with the script inside (its pid is in the supervisor's
  ``wrapped`` event: killing it ends them all). Either one alone is covered;
- kernel attack surface: the script makes system calls on the host kernel (no seccomp
  filter); with an agent running as root it can still create a user namespace of its own
  (bubblewrap can forbid that only when it creates one, i.e. for a non-root agent);
- CPU share, GPU memory, and memory between samples (no cgroups); tmpfs pages are RAM
  that the tree memory cap does not see (``tmp_mb`` bounds them);
- RLIMIT_NPROC counts every process of ``run_as_uid`` on the machine: give concurrent
  workers different uids if their scripts fork a lot;
- reading what is bound: the Python environment and system files are readable (not
  secret by design); anything the operator puts under /opt or in ``extra_ro_binds``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mlguild.core.execution import Limits
from mlguild.sandbox.backbones import mounts as backbone_mounts
from mlguild.sandbox.namespace import Binds, gpu_devices, namespace_args, system_binds
from mlguild.sandbox.plan import MIB, Plan, drop_target, grant_workdir, python_paths, restore_workdir, rlimits_for
from mlguild.sandbox.runner import SupervisedSandbox

DATA_MOUNT = "/data"
BWRAP_ENV = "MLGUILD_BWRAP"


def bwrap_path() -> str | None:
    """The bubblewrap binary to use: ``$MLGUILD_BWRAP`` when set (e.g. a build of one's
    own, or a path that does not exist, to run as if bubblewrap were missing), else
    ``bwrap`` on PATH; None when there is none."""
    return os.environ.get(BWRAP_ENV) or shutil.which("bwrap")


@functools.cache
def probe(bwrap: str | None = None) -> tuple[bool, str]:
    """(usable, why): can ``bwrap`` run a trivial command with our isolation flags here?

    ``bwrap``: the binary (default: ``bwrap_path()``). Cached for the life of the
    process. ``why`` is "" when usable, else one line with the cause and the fix.
    """
    exe = bwrap or bwrap_path()
    if exe is None or not os.access(exe, os.X_OK):
        if os.environ.get(BWRAP_ENV) and not bwrap:
            return False, (
                f"{BWRAP_ENV}={os.environ[BWRAP_ENV]} is not an executable file "
                f"(fix: unset {BWRAP_ENV}, or point it at bubblewrap)"
            )
        return False, "bubblewrap is not installed (fix: apt-get install -y bubblewrap)"
    binds = Binds([])
    system_binds(binds)
    true = shutil.which("true") or "/bin/true"
    argv = [
        exe,
        *namespace_args(os.geteuid() == 0, drop=False),
        *binds.args,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(MIB),
        "--tmpfs",
        "/tmp",
        "--",
        true,
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap could not run: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, (
            f"bubblewrap fails here: {err[-1] if err else done.returncode} "
            "(namespaces disabled? fix: allow user namespaces, or run as root)"
        )
    return True, ""


class BwrapSandbox(SupervisedSandbox):
    """Runs scripts inside bubblewrap under the supervisor (module docstring: the contract)."""

    layer = "bwrap"
    name = "bwrap"
    strong = True

    def __init__(
        self,
        bwrap: str | None = None,
        gpu: bool | None = None,
        extra_ro_binds: tuple[str, ...] = (),
        setpriv: str | None = "auto",
        **kw,
    ):
        """``gpu``: pass GPU devices through (None: when present). ``extra_ro_binds``:
        more host paths to show read-only at the same place. ``setpriv``: its path, "auto"
        to find it, None to never drop the uid (the script is then a root without caps)."""
        super().__init__(**kw)
        self.bwrap = bwrap or bwrap_path() or "bwrap"
        self.gpu = gpu
        self.extra_ro_binds = tuple(extra_ro_binds)
        if setpriv == "auto":
            setpriv = next((p for p in ("/usr/bin/setpriv", "/bin/setpriv") if os.access(p, os.X_OK)), None)
        self.setpriv = setpriv
        self._drop_checked: dict[tuple[int, int], str] = {}

    def devices(self) -> list[str]:
        """The device nodes this sandbox passes through."""
        return gpu_devices() if self.gpu in (None, True) else []

    def mounts(self, argv: list[str], cwd: Path, env: dict[str, str], limits: Limits, data_dir: Path | None) -> Binds:
        """Every mount of one run, in order (parents before children)."""
        binds = Binds([str(cwd)] + ([str(data_dir)] if data_dir else []))
        system_binds(binds)
        # The kernel file systems and the private /tmp come before any bind of a path under
        # them: bwrap mounts in order, so a tmpfs mounted later would hide a Python
        # environment or a run directory that lives under /tmp (as CI clones may).
        binds.args += ["--proc", "/proc", "--dev", "/dev"]
        devices = self.devices()
        for dev in devices:
            binds.args += ["--dev-bind", dev, dev]
        if devices and os.path.isdir("/sys"):
            binds.args += ["--ro-bind", "/sys", "/sys"]
        size = str(limits.tmp_mb * MIB)
        for tmp in ("/tmp", "/dev/shm"):  # 1777 like the host's: semaphores live in /dev/shm
            binds.args += ["--perms", "1777", "--size", size, "--tmpfs", tmp]
        binds.dirs |= {"/tmp", "/dev", "/dev/shm", "/proc"}
        for p in python_paths():
            binds.bind(p)
        for p in env.get("LD_LIBRARY_PATH", "").split(":"):
            if os.path.isabs(p):
                binds.bind(p)
        for p in self.extra_ro_binds:
            binds.bind(p)
        # Pretrained weights in a user's torch or Hugging Face cache (sandbox/backbones), and
        # the run's embeddings cache that the harness fills: read-only, at the same place.
        for p in backbone_mounts():
            binds.bind(p)
        cache = env.get("MLGUILD_EMBEDDINGS", "")
        if os.path.isabs(cache) and os.path.isdir(cache):
            binds.bind(cache)
        if os.path.isabs(argv[0]):
            binds.bind(argv[0])
        if data_dir is not None:
            binds.args += ["--ro-bind", str(data_dir), DATA_MOUNT]
        binds.parents(str(cwd))
        binds.args += ["--bind", str(cwd), str(cwd), "--chdir", str(cwd)]
        return binds

    def drop_problem(self, uid: int, gid: int) -> str:
        """Why ``uid`` cannot run the interpreter inside the sandbox ("" if it can).

        A real run, once per (uid, gid): bwrap with this layer's mounts, setpriv to the
        uid, then the interpreter checks it can read every path it imports from."""
        key = (uid, gid)
        if key not in self._drop_checked:
            self._drop_checked[key] = self._probe_drop(uid, gid)
        return self._drop_checked[key]

    def _probe_drop(self, uid: int, gid: int) -> str:
        if self.setpriv is None:
            return "setpriv (util-linux) not found"
        with tempfile.TemporaryDirectory(prefix="mlguild-probe-") as tmp:
            granted = grant_workdir(Path(tmp), gid)
            try:
                code = (
                    "import os, sys; bad = [p for p in sys.argv[1:] "
                    "if not os.access(p, os.R_OK)]; print(*bad); sys.exit(bool(bad))"
                )
                argv, _ = self._command(
                    [sys.executable, "-I", "-S", "-c", code, *python_paths()], Path(tmp), {}, Limits(), None, (uid, gid)
                )
                done = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"probe failed: {exc}"
            finally:
                restore_workdir(granted)
        if done.returncode == 0:
            return ""
        why = (done.stdout or done.stderr).decode("utf-8", "replace").strip()
        return f"uid {uid} cannot use the interpreter: {why[-300:] or done.returncode}"

    def _command(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        limits: Limits,
        data_dir: Path | None,
        drop: tuple[int, int] | None,
    ) -> tuple[list[str], list[str]]:
        """The full bwrap command line, and the binds left out because they hold the run."""
        binds = self.mounts(argv, cwd, env, limits, data_dir)
        out = [self.bwrap, *namespace_args(os.geteuid() == 0, drop is not None), *binds.args, "--clearenv"]
        for name, value in env.items():
            out += ["--setenv", name, value]
        out.append("--")
        if drop is not None:
            if self.setpriv is None:  # drop_problem() refuses every drop then
                raise ValueError("a uid drop needs setpriv")
            uid, gid = drop
            out += [
                self.setpriv,
                f"--reuid={uid}",
                f"--regid={gid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
            ]
        return out + argv, binds.skipped

    def plan(self, argv: list[str], cwd: Path, env: dict[str, str], limits: Limits, data_dir: Path | None) -> Plan:
        """bwrap around the script; ``MLGUILD_DATA=/data``, ``TMPDIR=/tmp``; a uid drop
        when the agent is root and the probe allows it."""
        if data_dir is not None:
            env["MLGUILD_DATA"] = DATA_MOUNT
        env["TMPDIR"] = "/tmp"
        notes: list[str] = []
        granted: list = []
        target = drop_target(limits)
        if target is not None:
            why = self.drop_problem(*target)
            if not why and data_dir is not None and os.stat(data_dir).st_mode & 0o005 != 0o005:
                why = f"{data_dir} is not readable by other users"
            if not why:
                try:
                    granted = grant_workdir(cwd, target[1])
                except OSError as exc:
                    why = f"could not open {cwd} to it: {exc}"
            if why:
                notes.append(f"ran as root without capabilities, not uid {target[0]}: {why}")
                target = None
        command, skipped = self._command(argv, cwd, env, limits, data_dir, target)
        if skipped:
            notes.append(f"not mounted (they contain the run directory): {', '.join(skipped)}")
        spec = {"wrapped": True, "run_uid": target[0] if target else os.geteuid()}
        sup_env = {"PATH": os.environ.get("PATH", os.defpath)}
        return Plan(command, sup_env, rlimits_for(limits, dropping=target is not None), spec, notes, granted)


__all__ = ["BWRAP_ENV", "DATA_MOUNT", "BwrapSandbox", "bwrap_path", "gpu_devices", "probe"]
