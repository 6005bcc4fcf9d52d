"""Crash-safe file writes shared by the run directory, the reply cache and reports."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write to a fresh temp file, fsync, rename over the target, fsync the directory.

    The temp file is created exclusively (mkstemp: O_EXCL), so a link a script planted in a
    node directory can never redirect this write to another file (the scorer, say).
    """
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
