"""The GPUs scripts may use, and each worker's share of them.

Discovery goes through one seam, ``discover(env)``:

- ``CUDA_VISIBLE_DEVICES`` in the agent's environment, when set, is the user's choice and is
  kept as it is ("" or "-1": no GPU);
- else ``nvidia-smi`` (``$MLGUILD_NVIDIA_SMI`` names the binary, e.g. a fake one in a test)
  lists the GPUs by index; none found, or no nvidia-smi: no GPU.

Several workers split the GPUs between them (``share``): worker k of n gets every n-th GPU
from its own, or with fewer GPUs than workers, GPU k mod count. A script sees only its
share as ``CUDA_VISIBLE_DEVICES`` (so inside it they are ``cuda:0``, ``cuda:1``...: no script
names a host ordinal) and ``MLGUILD_DEVICE`` (``cuda`` or ``cpu``). Where there is no GPU,
``CUDA_VISIBLE_DEVICES`` is empty and ``MLGUILD_DEVICE=cpu``: libraries then skip their CUDA
probes, and the recipes never ask for one, so a CPU run prints no GPU warnings.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping

SMI_ENV = "MLGUILD_NVIDIA_SMI"


def discover(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The GPU ids (as CUDA_VISIBLE_DEVICES writes them) scripts may use; () for none."""
    env = os.environ if env is None else env
    if "CUDA_VISIBLE_DEVICES" in env:
        ids = [d.strip() for d in env["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
        return () if not ids or ids[0] == "-1" else tuple(ids)
    return _nvidia_smi(env.get(SMI_ENV) or shutil.which("nvidia-smi") or "")


@functools.cache
def _nvidia_smi(binary: str) -> tuple[str, ...]:
    if not binary:
        return ()
    try:
        done = subprocess.run(
            [binary, "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if done.returncode != 0:
        return ()
    return tuple(line.strip() for line in done.stdout.splitlines() if line.strip().isdigit())


def share(gpus: tuple[str, ...], worker: int, workers: int) -> tuple[str, ...]:
    """Worker ``worker``'s GPUs (workers counted from 1): disjoint shares while there are at
    least as many GPUs as workers, else one GPU each, shared round-robin."""
    if not gpus:
        return ()
    k, n = worker - 1, max(workers, 1)
    if len(gpus) < n:
        return (gpus[k % len(gpus)],)
    return tuple(gpus[i] for i in range(len(gpus)) if i % n == k)


def script_env(gpus: tuple[str, ...]) -> dict[str, str]:
    """The variables that tell a script which device to use."""
    return {"CUDA_VISIBLE_DEVICES": ",".join(gpus), "MLGUILD_DEVICE": "cuda" if gpus else "cpu"}


def describe(gpus: tuple[str, ...]) -> str:
    """What a node ran on, for the journal and ``mlguild status``: ``cpu`` or ``gpu 0,1``."""
    return f"gpu {','.join(gpus)}" if gpus else "cpu"
