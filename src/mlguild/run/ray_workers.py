"""Workers on a Ray cluster (``--ray auto|ADDRESS``, the ``[ray]`` extra).

The workers are the same as on one machine (mlguild.run.workers): the same threads choose,
propose and record nodes in the driver, which keeps the run directory, the journal and the
sealed labels. Only the scripts go elsewhere: ``RaySandbox`` hands each one to a Ray task
that runs it in the usual sandbox on whichever node Ray picks, and returns what happened.
No disk is shared: the node's folder, the public data and the embeddings cache travel
through Ray's object store, and the script's outputs come back the same way
(mlguild.run.ray_ship), to be scored by the driver. The journal records the host and Ray
node that ran each script (``exec.host``).

A Ray worker that dies mid-script, or the whole Ray node it ran on, fails that node as
``worker_lost``; the run goes on on the nodes left, and nothing finished is lost.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.execution import ExecResult, ExecStatus, Limits
from ..core.protocols import Sandbox
from .embeddings_cache import EMBEDDINGS_ENV
from .ray_ship import Inputs, node_files, run_shipped, write_back

_remote_run: Any = None  # the Ray task, made once Ray is imported


def _run_script(inner: Sandbox, argv, env, limits, node, inputs, paths):
    """The Ray task (its name is what ``ps`` shows of a Ray worker running a script)."""
    return run_shipped(inner, argv, env, limits, node, inputs, paths)


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
        self._inputs = Inputs()  # the read-only folders put in the object store
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

        # Ray places the task by its CPU count, at most a node's; the CPU numbers are the driver's machine's.
        cpus = min(len(limits.cpus) if limits.cpus else 1, self._largest_node())
        remote_limits = Limits(**{**limits.__dict__, "cpus": None})
        inputs, paths = {}, {"cwd": str(cwd), "python": sys.executable}
        if data_dir is not None:
            inputs["data"], paths["data"] = self._inputs.ship(data_dir), "data"
        cache = env.get(EMBEDDINGS_ENV, "")
        if os.path.isabs(cache):
            inputs["embeddings"] = self._inputs.ship(Path(cache))
        ref = _remote_run.options(num_cpus=cpus).remote(
            self.inner, argv, env, remote_limits, node_files(cwd), inputs, paths
        )
        with self._lock:
            self._running.add(ref)
        try:
            result, outputs, *streams = ray.get(ref)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError) as exc:
            return self._failed(ExecStatus.WORKER_LOST, "the Ray worker running the script was lost", exc)
        except (ray.exceptions.RayError, OSError) as exc:
            return self._failed(ExecStatus.SANDBOX_ERROR, "the Ray worker running the script failed", exc)
        finally:
            with self._lock:
                self._running.discard(ref)
        write_back(cwd, outputs, stdout_path, stderr_path, streams)
        return result

    def _failed(self, status: ExecStatus, what: str, exc: BaseException) -> ExecResult:
        first = (str(exc).splitlines() or [""])[0]
        reason = f"{what}: {type(exc).__name__}: {first}"
        return ExecResult(status, None, None, 0.0, layer=self.layer, reason=reason)

    def _largest_node(self) -> int:
        """The most CPUs one live Ray node has (a task asking for more would wait for ever)."""
        import ray

        cpus = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")]
        return max(1, int(max(cpus, default=1)))

    def cancel_all(self) -> int:
        """Stop every script in flight (Ctrl-C on the driver); how many."""
        import ray

        with self._lock:
            running = list(self._running)
        for ref in running:
            ray.cancel(ref, force=True)
        return len(running)
