"""What travels between the run and a Ray worker node, so a cluster needs no shared disk.

The driver (the run's process, which keeps the run folder) sends a script's node folder, the
read-only folders it may read (the public data, the run's embeddings cache) and its command;
the Ray task on a worker node writes them into its own scratch folder, runs the script there
in the usual sandbox, and sends back what the script wrote under ``output/`` and its two
streams. The driver writes those into the node's folder and scores them itself, so the
sealed labels never leave it: nothing under ``sealed/`` is ever packed (only the node folder
and the data folder the executor names, which the guard has already checked).

A read-only folder travels once per content: the driver puts it in Ray's object store once
(keyed by its files' names, sizes and times) and names it by a digest of its content; a
worker node that already holds that digest in its scratch folder does not fetch it again.
The scratch folder is ``$MLGUILD_RAY_SCRATCH`` where a node sets it, else ``mlguild/`` in the
Ray node's own temp dir (``ray start --temp-dir``), else in the system's temp dir.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.execution import ExecResult, Limits
from ..core.protocols import Sandbox

OUTPUT = "output"  # what a script leaves for the harness (run/executor.judge_outputs)
_STREAMS = ("stdout.txt", "stderr.txt")  # rewritten by the run: never sent


def pack(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The regular files under ``root`` by their relative POSIX paths, links left out (a link
    could lead the packer, or a script's outputs, out of the folder); top-level names in
    ``skip`` too."""
    files: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        rel_dir = Path(folder).relative_to(root)
        if rel_dir == Path("."):
            dirs[:] = [d for d in dirs if d not in skip]
            names = [n for n in names if n not in skip]
        for name in names:
            path = Path(folder) / name
            if stat.S_ISREG(path.lstat().st_mode):
                files[(rel_dir / name).as_posix()] = path.read_bytes()
    return files


def unpack(files: dict[str, bytes], dest: Path, mode: int = 0o644) -> None:
    """Write ``files`` (from ``pack``) under ``dest``; a path that would leave it is refused."""
    for rel, data in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"a packed file's path leaves its folder: {rel!r}")
        target = dest.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        target.write_bytes(data)
        target.chmod(mode)


def digest(files: dict[str, bytes]) -> str:
    """A digest of a packed folder's names and contents."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()[:24]


@dataclass(frozen=True)
class Shipped:
    """A read-only folder in the object store: where it is on the driver, its digest, and a
    list holding its object reference (in a list, so Ray does not fetch it for every task)."""

    path: str
    digest: str
    ref: list[Any]


class Inputs:
    """The driver's read-only folders in Ray's object store, each put once per content."""

    def __init__(self) -> None:
        self._shipped: dict[str, tuple[tuple, Shipped]] = {}
        self._lock = threading.Lock()

    def ship(self, folder: Path) -> Shipped:
        import ray

        key = _listing(folder)
        with self._lock:
            known = self._shipped.get(str(folder))
            if known and known[0] == key:
                return known[1]
            files = pack(folder) if folder.is_dir() else {}
            shipped = Shipped(str(folder), digest(files), [ray.put(files)])
            self._shipped[str(folder)] = (key, shipped)
            return shipped


def _listing(folder: Path) -> tuple:
    """What says a folder changed: its files' names, sizes and modification times."""
    if not folder.is_dir():
        return ()
    return tuple(
        sorted(
            (str(p.relative_to(folder)), p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink()
        )
    )


# ---------------------------------------------------------------- on the worker node


def scratch() -> Path:
    """This node's scratch folder (see the module's docstring)."""
    chosen = os.environ.get("MLGUILD_RAY_SCRATCH")
    if not chosen:
        try:  # the Ray node's --temp-dir: this node's own (Ray says it in no public call)
            from ray._private import worker

            node = worker.global_worker.node
        except (ImportError, AttributeError):
            node = None
        temp = node.get_temp_dir_path() if node is not None else None
        chosen = os.path.join(temp, "mlguild") if temp else os.path.join(tempfile.gettempdir(), "mlguild-ray")
    path = Path(chosen)
    path.mkdir(parents=True, exist_ok=True, mode=0o755)
    return path


def materialise(shipped: Shipped, root: Path) -> Path:
    """The local copy of a shipped folder, fetched and written once per digest on this node
    (into a folder of its own first, then renamed: a task that reads it sees it whole)."""
    import ray

    local = root / "inputs" / shipped.digest
    if local.is_dir():
        return local
    local.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    partial = Path(tempfile.mkdtemp(prefix=f".{shipped.digest}-", dir=local.parent))
    try:
        unpack(ray.get(shipped.ref[0]), partial)
        partial.chmod(0o755)  # a dropped uid reads the data (sandbox/local)
        os.rename(partial, local)
    except OSError:
        if not local.is_dir():  # else another task of this node wrote it first
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return local


def where() -> str:
    """This host and Ray node, as the journal records it (``ExecResult.host``)."""
    import ray

    return f"{socket.gethostname()} (Ray node {ray.get_runtime_context().get_node_id()})"


def run_shipped(
    inner: Sandbox,
    argv: list[str],
    env: dict[str, str],
    limits: Limits,
    node: dict[str, bytes],
    inputs: dict[str, Shipped],
    paths: dict[str, str],
) -> tuple[ExecResult, dict[str, bytes], bytes, bytes]:
    """What a Ray worker does for one node: write its folder and inputs here, run its script in
    the sandbox as locally, and return (the result, its ``output/`` files, stdout, stderr).

    ``paths`` names the driver's folders: ``cwd`` (the node's), ``python`` (the interpreter
    in ``argv``), ``data`` (the key of ``inputs`` that is the data, if any). Every value of
    ``env`` that names a driver's folder is made to name its copy here."""
    root = scratch()
    local = {name: materialise(shipped, root) for name, shipped in inputs.items()}
    (root / "nodes").mkdir(exist_ok=True, mode=0o755)
    cwd = Path(tempfile.mkdtemp(prefix="node-", dir=root / "nodes"))
    try:
        unpack(node, cwd)
        moved = {paths["cwd"]: str(cwd), **{inputs[name].path: str(path) for name, path in local.items()}}
        env = {k: _moved(v, moved) for k, v in env.items()}
        env["TMPDIR"] = tempfile.gettempdir()
        if "MLGUILD_STARTED_AT" in env:  # the limit's clock starts here, after the shipping, on this host's clock
            env["MLGUILD_STARTED_AT"] = f"{time.time():.3f}"
        if argv and argv[0] == paths["python"]:
            argv = [sys.executable, *argv[1:]]  # this node's interpreter, with mlguild's packages
        data = local.get(paths.get("data", ""))
        result = inner.run(argv, cwd, env, limits, cwd / _STREAMS[0], cwd / _STREAMS[1], data)
        result.host = where()
        outputs = pack(cwd / OUTPUT) if (cwd / OUTPUT).is_dir() and not (cwd / OUTPUT).is_symlink() else {}
        streams = [(cwd / name).read_bytes() if (cwd / name).is_file() else b"" for name in _STREAMS]
        return result, outputs, streams[0], streams[1]
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def _moved(value: str, moved: dict[str, str]) -> str:
    """``value`` with a leading driver's folder replaced by its copy on this node."""
    for there, here in moved.items():
        if value == there or value.startswith(there + os.sep):
            return here + value[len(there) :]
    return value


def node_files(node_dir: Path) -> dict[str, bytes]:
    """What a node's script may read in its own folder (its script, the parents' predictions a
    blend reads, its steps), without its old outputs and streams."""
    return pack(node_dir, skip=(OUTPUT, *_STREAMS))


def write_back(node_dir: Path, outputs: dict[str, bytes], stdout_path: Path, stderr_path: Path, streams) -> None:
    """Put what the script wrote on the worker node where the executor reads it."""
    output = node_dir / OUTPUT
    if output.is_symlink() or output.is_file():
        output.unlink()
    shutil.rmtree(output, ignore_errors=True)
    if outputs:
        output.mkdir()
        unpack(outputs, output)
    stdout_path.write_bytes(streams[0])
    stderr_path.write_bytes(streams[1])
