"""Append-only, fsynced JSONL event log: the run's source of truth.

Durability contract: ``append`` returns only after the record is on disk (one ``write`` on an
O_APPEND descriptor, then ``fsync``). A hard kill loses at most the record being written; on
open, a torn last line is truncated away. A bad line *in the middle* is corruption and is
reported, never skipped: silently dropping a finished node would make resume re-run it.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.errors import JournalCorrupt
from ..util.fs import fsync_dir

SCHEMA_VERSION = 1


def _scan(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Parse every complete record. Returns (records, byte offset where a torn tail starts)."""
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    # The final element is b"" when the file ends in a newline; otherwise it is a torn tail.
    for number, line in enumerate(lines[:-1], start=1):
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            raise JournalCorrupt(
                f"{path} line {number} is corrupt ({exc}); records after it cannot be trusted",
                f"inspect the line with `sed -n {number}p {path}`; move the file aside to start a new run",
            ) from None
        records.append(record)
        offset += len(line) + 1
    return records, offset


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """All complete records of a journal, without modifying it (a torn tail is ignored)."""
    path = Path(path)
    if not path.exists():
        return []
    return _scan(path)[0]


class Journal:
    """One writer per run. Records get a monotonically increasing ``seq`` and a wall-clock ``ts``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        created = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if created:
            self.records: list[dict[str, Any]] = []
        else:
            self.records, good_bytes = _scan(self.path)
            if good_bytes != self.path.stat().st_size:
                # A writer died mid-record: the tail was never acknowledged, so drop it.
                os.truncate(self.path, good_bytes)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if created:
            os.fsync(self._fd)
            fsync_dir(self.path.parent)
        self._seq = self.records[-1]["seq"] + 1 if self.records else 0

    def append(self, type: str, **data: Any) -> dict[str, Any]:
        """Write one record durably and return it. Values must be JSON-serialisable."""
        with self._lock:  # workers' threads (and their LLM ledgers) append at once
            record = {"v": SCHEMA_VERSION, "seq": self._seq, "ts": round(time.time(), 3), "type": type, **data}
            line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
            written = os.write(self._fd, line)
            if written != len(line):  # O_APPEND writes of a few KB are whole on local filesystems
                # A short write is a disk filling up: the torn line is repaired when the run is opened.
                raise OSError(errno.ENOSPC, f"short write ({written} of {len(line)} bytes)", str(self.path))
            os.fsync(self._fd)
            self._seq += 1
            self.records.append(record)
            return record

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
