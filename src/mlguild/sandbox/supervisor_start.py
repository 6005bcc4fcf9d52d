"""Starting supervisor processes: on demand, or one started ahead for a thread's next run.

Starting the supervisor's interpreter is the largest part of a run's start-up, so each
thread of an agent keeps one supervisor started ahead (a ``Spare``): it boots while the
current run goes on, then waits, idle and unarmed, for the next run's spec. It is used only
by the thread that started it (its PDEATHSIG follows that thread, as for a fresh one), only
if it is still alive and was started the same way, and it exits on EOF if the agent dies
first; a sandbox or thread that goes away kills its spare, and so does the agent at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import weakref
from pathlib import Path

from mlguild.sandbox import supervisor as _sup

SUPERVISOR_PATH = Path(_sup.__file__).resolve()
# The supervisor is imported, not run by path: a script run by path is compiled on every
# start (~4 ms for this one), an imported module loads from its cached .pyc. -I keeps the
# working directory and site-packages off sys.path; its own directory is appended, so
# the standard library still wins over anything placed next to it.
SUPERVISOR_ARGV = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    ("import os, sys; sys.path.append(sys.argv[1]); import supervisor; os._exit(supervisor.main())"),
    str(SUPERVISOR_PATH.parent),
]


def supervisor_env() -> dict[str, str]:
    return {k: os.environ[k] for k in ("PATH", "LD_LIBRARY_PATH") if k in os.environ}


def start_supervisor() -> subprocess.Popen:
    # No preexec_fn: the agent may be multi-threaded, so the supervisor arms its own
    # PDEATHSIG once it has its spec, and checks it was not orphaned before doing so.
    return subprocess.Popen(
        SUPERVISOR_ARGV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=supervisor_env(),
        cwd="/",
        close_fds=True,
        start_new_session=True,
    )


class Spare:
    """A supervisor started ahead for the next run of the thread that holds it."""

    def __init__(self):
        self.key = (list(SUPERVISOR_ARGV), supervisor_env())
        self.proc: subprocess.Popen | None = None
        self.proc = start_supervisor()
        _SPARES.add(self)

    def take(self) -> subprocess.Popen | None:
        """The process, if it can still serve a run as a fresh one would; else None."""
        proc = self.proc
        if proc is None or proc.poll() is not None or self.key != (SUPERVISOR_ARGV, supervisor_env()):
            return None
        self.proc = None
        try:
            proc.send_signal(signal.SIGCONT)  # in case a script sharing our uid stopped it
        except OSError:
            pass
        return proc

    def close(self) -> None:
        """Kill it if unused (it has no children yet), close its pipes and reap it."""
        proc, self.proc = self.proc, None
        if proc is not None:
            with proc:
                proc.kill()

    def forget(self) -> None:
        """In a forked child of the agent: the process is the parent's; close only our
        copies of its pipes (so it still sees EOF when the parent goes)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:  # all three are pipes (start_supervisor)
                    pipe.close()
            proc.returncode = -1  # not our child: nothing to wait for

    def __del__(self):
        with contextlib.suppress(Exception):  # late in shutdown: it exits on EOF anyway
            self.close()


_SPARES: weakref.WeakSet[Spare] = weakref.WeakSet()


def _close_spares() -> None:
    for spare in list(_SPARES):
        spare.close()


def _forget_spares() -> None:
    for spare in list(_SPARES):
        spare.forget()


# At exit before module teardown (a __del__ then may find subprocess half gone); in a
# forked child at once, before it could take or kill what is not its child.
atexit.register(_close_spares)
os.register_at_fork(after_in_child=_forget_spares)


def send_nowait(proc: subprocess.Popen, payload: bytes) -> bytes:
    """Write what the supervisor's stdin pipe takes without blocking; return the rest
    (communicate() writes it, under its timeout, and closes the pipe)."""
    if proc.stdin is None:
        raise ValueError("the supervisor was started without a stdin pipe")
    fd = proc.stdin.fileno()
    os.set_blocking(fd, False)
    try:
        return payload[os.write(fd, payload) :]
    except BlockingIOError:
        return payload
    except BrokenPipeError:  # it is gone: communicate() reports how it ended
        return b""
    finally:
        os.set_blocking(fd, True)
