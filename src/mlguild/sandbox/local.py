"""The always-on sandbox layer: runs one untrusted script with the standard library only.

It works on any Linux machine with /proc, as root or not, with no packages and no
privileges to configure. Each claim below has an adversarial test in tests/adversarial/
(run against this layer and the namespace layer) or tests/sandbox/test_sandbox.py.

COVERS (while the agent process is alive, and also when it is killed with SIGKILL):
- wall-clock timeout: SIGTERM to every process of the script, ``term_grace_s``, SIGKILL;
  a script that ignores SIGTERM still dies;
- no survivors: when the main script ends (exit, crash, timeout, any cap), every process
  it started is killed and reaped before ``run`` returns, including setsid + double-fork
  daemons, many forked children and abandoned multiprocessing pools (the supervisor is a
  child subreaper, so orphans reparent to it and cannot hide from its /proc walk);
- the agent dying: the supervisor's PDEATHSIG is SIGTERM, which runs the same sweep;
- a supervisor held stopped (SIGSTOP, or a ptrace stop): the agent checks it every
  0.25 s and, seen stopped twice in a row, kills the script's whole tree (orphans stay
  in the stopped supervisor's tree: it is their subreaper) and the supervisor at once,
  instead of waiting out timeout + grace + slack (status ``sandbox_error``). The
  supervisor is not dumpable, and a script that runs as root loses CAP_SYS_PTRACE
  (bounding set included, so no exec brings it back): it cannot ptrace-attach the
  supervisor, the agent or pid 1, nor open their /proc/<pid>/mem, root or cwd (the
  kernel asks for CAP_SYS_PTRACE toward a non-dumpable process, or one holding it);
- memory: the RSS of the whole tree is sampled every ~150 ms and the tree is killed over
  ``tree_memory_mb`` (status ``memory``); optional RLIMIT_AS per process (``memory_mb``);
- fork bombs: the number of live processes in the tree is sampled with the memory and
  the tree is killed over ``tree_procs`` (status ``procs``); under a dropped uid the
  kernel also refuses tasks past RLIMIT_NPROC (see ``Limits.nproc``);
- disk under the working directory: bytes and entries are sampled (every ~150 ms, less
  often when the walk is slow, and once more after the run, so a burst that ended
  between samples is still reported) and the tree is killed over ``disk_mb`` /
  ``max_files`` (status ``disk``); RLIMIT_FSIZE caps any single file, wherever it is;
- rlimits per process: RLIMIT_CPU (backstop), RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CORE=0,
  RLIMIT_NPROC (explicit, or under a dropped uid); no_new_privs, so no setuid binary or
  file capability gives the script more than it started with;
- output: stdout/stderr are read continuously into files that keep ``output_bytes`` per
  stream (head + tail, with a marker saying how many bytes were dropped), so a flood
  neither blocks the script nor fills the disk;
- environment: the script sees exactly the ``env`` it is given; ``safe_env`` builds an
  allowlist that never contains names like *KEY*, *TOKEN*, *SECRET*, *PASSWORD*;
- privilege, only when the agent is root AND ``run_as_uid`` can reach the interpreter,
  its libraries, the script, the working directory and the data (checked by a forked
  probe that really switches uid, every run): the script runs as that uid, so it cannot
  signal, ptrace or read the environment of the agent, write root's files, or mount.
  ``ExecResult.run_uid`` says which uid ran; ``ExecResult.notes`` why no drop happened.

DOES NOT COVER (use the namespace layer, bwrap.py, for these):
- network: the script can open any connection the machine can (TCP, UDP, DNS, abstract
  unix sockets, listening ports);
- the filesystem: the script reads whatever its uid can, and writes anywhere its uid can
  (/tmp, /dev/shm, other directories: not counted by the disk cap, and left behind:
  e.g. the /dev/shm semaphores of a killed multiprocessing pool). Sealed data is
  protected only by never being on a path the script is told about, and, under a
  dropped uid, by its file modes (a sealed directory must be mode 0700);
- privilege when no drop happened (e.g. the interpreter lives under /root, mode 0700, as
  on our machines; or the agent is not root and the script shares its uid): the script
  runs as the agent's uid. As root, with every capability but CAP_SYS_PTRACE, it READS
  EVERY FILE ON THE MACHINE, sealed labels of every run included (file modes do not
  stop root), and writes them: it can rewrite the scorer (the executor then stops the
  run and names the node: see executor.py), the journal, the workspace data and its own
  solution.py, mount and umount. As the agent's non-root uid it can ptrace the agent
  (unless Yama forbids it). Either way it can read the agent's environment through
  /proc/<pid>/environ (API keys: the kernel allows that read to a same-uid process
  without CAP_SYS_PTRACE), and kill or stop the agent or the supervisor. If it SIGKILLs
  the supervisor, the main script dies (PDEATHSIG) and the agent kills what is left in
  the script's session, but a process that also left that session escapes. This layer
  contains accidents and sloppy code; it is not a boundary against code written to
  attack it, which is why ``sandbox.kind=auto`` never picks it for LLM-written scripts
  (``mlguild run --sandbox local`` does, when asked: see sandbox/__init__.py);
- caps are sampled: a burst between samples overshoots (memory and disk by what the
  script can allocate or write in ~150 ms; processes by what it can fork) before the
  kill; the kernel OOM killer and a full disk are the last line;
- GPU memory and CPU share (no cgroups here).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mlguild.core.errors import ConfigError
from mlguild.core.execution import Limits
from mlguild.sandbox.plan import Plan, drop_target, grant_workdir, python_paths, rlimits_for
from mlguild.sandbox.runner import SupervisedSandbox

_SECRET_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_PASS_IF_SET = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "LD_LIBRARY_PATH",
    # thread counts the operator chose for this machine
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    # OpenBLAS mis-detects some virtual CPUs and crashes without these
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)


def safe_env(extra: dict[str, str] | None = None, cwd: Path | str | None = None) -> dict[str, str]:
    """Build the allowlisted environment for a script.

    Contains PATH, LANG, LC_ALL, TZ, TMPDIR, LD_LIBRARY_PATH and the thread / OpenBLAS
    variables when the agent has them set; HOME set to ``cwd`` (default: the current
    directory), PYTHONHASHSEED=0, PYTHONUNBUFFERED=1; then ``extra``. Raises ConfigError
    if ``extra`` has a name that looks like a secret (*KEY*, *TOKEN*, *SECRET*,
    *PASSWORD*): the script's environment is the one thing every layer keeps clean.
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


def drop_checks(argv: list[str], cwd: Path, env: dict[str, str], data_dir: Path | None) -> list[list]:
    """The [path, access mode] pairs a dropped uid must pass for the script to work."""
    exe = argv[0]
    if "/" not in exe:
        exe = shutil.which(exe, path=env.get("PATH", os.defpath)) or exe
    exe = os.path.join(cwd, exe)  # no-op for an absolute path
    checks: list[list] = [[exe, os.X_OK]]
    if os.path.exists(exe) and os.path.realpath(exe) == os.path.realpath(sys.executable):
        for p in python_paths():
            checks.append([p, os.R_OK | (os.X_OK if os.path.isdir(p) else 0)])
    checks.append([str(cwd), os.W_OK | os.X_OK])
    for arg in argv[1:]:
        path = cwd / arg
        if path.is_file():
            checks.append([str(path), os.R_OK])
    if data_dir is not None:
        checks.append([str(data_dir), os.R_OK | os.X_OK])
    return checks


class LocalSandbox(SupervisedSandbox):
    """Runs scripts under the stdlib supervisor (see the module docstring for the contract)."""

    layer = "local"
    name = "local"
    strong = False

    def __init__(self, **kw):
        super().__init__(**kw)
        self._drop_checked: dict[tuple[int, int], str] = {}

    def drop_problem(self, uid: int, gid: int) -> str:
        """Why ``uid`` cannot run this interpreter with its libraries ("" if it can).

        A real exec as that uid, once per (uid, gid); each run still re-checks its own
        script, working directory and data in the supervisor before dropping."""
        key = (uid, gid)
        if key not in self._drop_checked:
            paths = python_paths()
            code = (
                "import os, sys; bad = [p for p in sys.argv[1:] "
                "if not os.access(p, os.R_OK)]; print(*bad); sys.exit(bool(bad))"
            )
            try:
                done = subprocess.run(
                    [sys.executable, "-I", "-S", "-c", code, *paths],
                    user=uid,
                    group=gid,
                    extra_groups=[],
                    capture_output=True,
                    timeout=30,
                    cwd="/",
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
                why = (
                    ""
                    if done.returncode == 0
                    else (f"cannot read {done.stdout.decode().strip() or done.stderr.decode()[-200:]}")
                )
            except (OSError, subprocess.SubprocessError) as exc:
                why = f"cannot run {sys.executable}: {exc.__class__.__name__}"
            self._drop_checked[key] = why
        return self._drop_checked[key]

    def plan(self, argv: list[str], cwd: Path, env: dict[str, str], limits: Limits, data_dir: Path | None) -> Plan:
        """Same argv, ``MLGUILD_DATA`` set from ``data_dir``, and a uid drop to try."""
        if data_dir is not None:
            env["MLGUILD_DATA"] = str(data_dir)
        target = drop_target(limits)
        notes: list[str] = []
        granted: list = []
        spec: dict = {}
        if target is not None:
            try:
                granted = grant_workdir(cwd, target[1])
            except OSError as exc:
                notes.append(f"ran as root: could not open {cwd} to uid {target[0]}: {exc}")
                target = None
        if target is not None:
            spec["drop"] = {"uid": target[0], "gid": target[1], "checks": drop_checks(argv, cwd, env, data_dir)}
        return Plan(argv, env, rlimits_for(limits, dropping=target is not None), spec, notes, granted)


__all__ = ["LocalSandbox", "drop_checks", "safe_env"]
