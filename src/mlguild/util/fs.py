"""File helpers shared by the harness: crash-safe writes, reads that never follow a link a
script may have planted, and SHA-256 digests."""

from __future__ import annotations

import hashlib
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


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in the folder ``path`` durable (its entry fsynced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_no_follow(path: Path) -> bytes:
    """A node file's bytes, refusing (OSError) a link a script may have planted in its directory."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def read_text_no_follow(path: Path) -> str:
    """A node file's text, or "" when it is missing, not a regular file, or a link."""
    try:
        return read_no_follow(path).decode(errors="replace")
    except OSError:
        return ""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """The digest of a file, read in chunks (a workspace file can be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
