"""Starting the script's process for the supervisor: fork, set up, exec (stdlib only).

Like the supervisor, this is imported by a ``python -I -S`` that pays for every import, so
it does what subprocess.Popen would without importing subprocess.
"""

from __future__ import annotations

import _signal as signal  # the C module: ``signal`` imports enum
import errno
import os
import resource

if __package__:
    from . import procfs
else:  # imported by the supervisor started standalone, from this directory
    import procfs  # type: ignore[no-redef]  # the same module by its plain name, not a second one

PR_SET_NO_NEW_PRIVS = 38


def child_setup(
    rlimits: dict, supervisor_pid: int, drop: tuple[int, int] | None, no_new_privs: bool, cpus: list | None = None
) -> None:
    """Runs in the script's process between fork and exec (the supervisor is single-threaded)."""
    procfs.prctl(procfs.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != supervisor_pid:  # supervisor died before PDEATHSIG was armed
        os._exit(137)
    if cpus:  # inherited across exec and by every process the script starts
        os.sched_setaffinity(0, cpus)
    for name, (soft, hard) in rlimits.items():
        which = getattr(resource, f"RLIMIT_{name}")
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            # asked above the inherited hard limit: the tighter existing limit stands
            cur_hard = resource.getrlimit(which)[1]
            resource.setrlimit(which, (min(soft, cur_hard), cur_hard))
    if no_new_privs:
        # No setuid binary or file capability can give the script more than it starts
        # with. Not for bwrap, which may itself be setuid; it sets this for the script.
        procfs.prctl(PR_SET_NO_NEW_PRIVS, 1)
        if drop is None and os.geteuid() == 0:
            # A root script keeps every capability but this one: without it, it cannot
            # ptrace (or read /proc/<pid>/environ, mem, root of) the supervisor, which is
            # not dumpable, nor any process that holds it (the agent, pid 1). A ptrace
            # stop would leave the agent waiting out its safety timer.
            try:
                procfs.drop_capability(procfs.CAP_SYS_PTRACE)
            except OSError:
                pass  # no CAP_SETPCAP here: the agent still kills a supervisor held stopped
    if drop is not None:
        uid, gid = drop
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # last: it takes the right to do the calls above


def spawn(argv: list[str], cwd: str, env: dict, setup) -> tuple[int, int, int]:
    """Start ``argv`` as subprocess.Popen(..., stdin=DEVNULL, stdout=PIPE, stderr=PIPE,
    close_fds=True, start_new_session=True, preexec_fn=setup) would; return (pid, stdout
    read end, stderr read end). Raises OSError when the child could not be set up or exec
    failed (the child is reaped then).

    Not subprocess itself: importing it (locale, re, enum, threading) is ~8 ms of every
    script's start. The supervisor is single-threaded, so a plain fork is safe, and
    subprocess forks (no vfork) anyway when there is a preexec_fn.
    """
    # The PATH search happens here, as subprocess does it: in the child, after the uid drop,
    # os.execvpe would import a module (warnings) that the dropped uid may not be able to read.
    if os.path.dirname(argv[0]):
        candidates = [argv[0]]
    else:
        path = env.get("PATH", os.defpath).split(os.pathsep)
        candidates = [os.path.join(d, argv[0]) for d in path]
    out_r, out_w = os.pipe()  # non-inheritable (PEP 446): only the dup2 copies reach the script
    err_r, err_w = os.pipe()
    report_r, report_w = os.pipe()  # close-on-exec: EOF without a word means exec happened
    try:
        pid = os.fork()
    except OSError:
        for fd in (out_r, out_w, err_r, err_w, report_r, report_w):
            os.close(fd)
        raise
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            for name in os.listdir("/proc/self/fd"):  # close_fds: nothing else goes across
                if int(name) > 2 and int(name) != report_w:
                    try:
                        os.close(int(name))
                    except OSError:  # the listing's own descriptor
                        pass
            os.chdir(cwd)
            # Python ignores these; an ignored signal stays ignored across exec, and
            # RLIMIT_FSIZE must kill the script (SIGXFSZ). subprocess restores them too.
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            setup()
            failed: OSError | None = None
            for exe in candidates:
                try:
                    os.execve(exe, argv, env)
                except OSError as exc:  # report the first error other than "not there"
                    if failed is None or failed.errno in (errno.ENOENT, errno.ENOTDIR):
                        failed = exc
            if failed is None:  # no candidate at all (cannot happen: a PATH has one entry or more)
                raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
            raise failed
        except BaseException as exc:
            try:
                os.write(report_w, str(exc).encode("utf-8", "replace")[:4000] or b"?")
            finally:
                os._exit(127)
    for fd in (out_w, err_w, report_w):
        os.close(fd)
    failure = b""
    while chunk := os.read(report_r, 4096):
        failure += chunk
    os.close(report_r)
    if failure:
        os.waitpid(pid, 0)
        os.close(out_r)
        os.close(err_r)
        raise OSError(failure.decode("utf-8", "replace"))
    return pid, out_r, err_r
