"""Workers on a Ray cluster (``--ray auto|ADDRESS``, the ``[ray]`` extra).

The workers are the same as on one machine (mlguild.run.workers): the same threads choose,
propose and record nodes in the driver, which keeps the run directory, the journal and the
sealed labels. Only the scripts go elsewhere: ``RaySandbox`` hands each one to a Ray task
that runs it in the usual sandbox on whichever node Ray picks, and returns what happened.
What travels is the script's command, its working directory, its environment, its limits
and the path of the public data; the node's outputs are scored by the driver when the task
returns. So the run directory must be on a disk every Ray node sees (the case for a local
instance, and for a cluster sharing a filesystem).

A Ray worker that dies mid-script (killed, out of memory, its node lost) fails that node as
a sandbox error; the run goes on, and nothing finished is lost.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.execution import ExecResult, ExecStatus, Limits
from ..core.protocols import Sandbox

_remote_run: Any = None  # the Ray task, made once Ray is imported


def _run_script(sandbox: Sandbox, argv, cwd, env, limits, stdout_path, stderr_path, data_dir) -> ExecResult:
    """What a Ray worker does for one node: run its script in the sandbox, as locally."""
    return sandbox.run(argv, cwd, env, limits, stdout_path, stderr_path, data_dir)


def connect(address: str) -> str:
    """Join the Ray cluster at ``address``, or with "auto" the one this machine belongs to,
    starting a local instance when there is none. Says where it connected."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "--ray needs the Ray package", "pip install 'mlguild[ray]' (or ./scripts/setup ray), or drop --ray"
        ) from exc
    if not ray.is_initialized():
        if address != "auto":
            _check_reachable(address)
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        try:
            if address == "auto" and not os.environ.get("RAY_ADDRESS"):
                try:
                    ray.init(address="auto", **options)
                except ConnectionError:  # no cluster here: a local instance on this machine
                    ray.init(**options)
            else:
                ray.init(address=None if address == "auto" else address, **options)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise ConfigError(
                f"cannot join the Ray cluster at {address}: {exc}",
                "start it (`ray start --head`), give its address (`--ray HOST:6379`), or use --ray auto",
            ) from exc
    global _remote_run
    if _remote_run is None:
        # No retries: a retried script would run a node twice; its death is the node's failure.
        _remote_run = ray.remote(max_retries=0)(_run_script)
    cpus = int(ray.cluster_resources().get("CPU", 0))
    return f"Ray cluster with {cpus} CPUs"


def _check_reachable(address: str) -> None:
    """Fail at once on a HOST:PORT nothing answers at: Ray itself retries for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # another form Ray understands: let it judge
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(
            f"cannot join the Ray cluster at {address}: nothing answers there ({exc})",
            "start it (`ray start --head`), give its address (`--ray HOST:6379`), or use --ray auto",
        ) from exc


class RaySandbox:
    """A sandbox whose scripts run as Ray tasks, each in ``inner`` on a Ray worker."""

    def __init__(self, inner: Sandbox):
        if _remote_run is None:
            raise ConfigError("Ray is not connected", "call mlguild.run.ray_workers.connect first")
        self.inner = inner
        self.layer = f"ray+{inner.layer}"
        self.strong = inner.strong
        self._running: set[Any] = set()  # object refs of scripts in flight
        self._lock = threading.Lock()

    def run(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        limits: Limits,
        stdout_path: Path,
        stderr_path: Path,
        data_dir: Path | None = None,
    ) -> ExecResult:
        import ray

        cpus = len(limits.cpus) if limits.cpus else 1
        # Ray places the task by its CPU count; the CPU numbers are the driver's machine's.
        remote_limits = Limits(**{**limits.__dict__, "cpus": None})
        ref = _remote_run.options(num_cpus=cpus).remote(
            self.inner, argv, cwd, env, remote_limits, stdout_path, stderr_path, data_dir
        )
        with self._lock:
            self._running.add(ref)
        try:
            return ray.get(ref)
        except (ray.exceptions.RayError, OSError) as exc:
            reason = f"the Ray worker running the script failed: {type(exc).__name__}: {str(exc).splitlines()[0]}"
            return ExecResult(ExecStatus.SANDBOX_ERROR, None, None, 0.0, layer=self.layer, reason=reason)
        finally:
            with self._lock:
                self._running.discard(ref)

    def cancel_all(self) -> int:
        """Stop every script in flight (Ctrl-C on the driver); how many."""
        import ray

        with self._lock:
            running = list(self._running)
        for ref in running:
            ray.cancel(ref, force=True)
        return len(running)
