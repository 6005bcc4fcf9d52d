"""Bounded capture of a script's stdout/stderr (stdlib only; imported by the supervisor)."""

from __future__ import annotations

import os

MARKER = b"\n[mlguild sandbox: %d bytes dropped here; the head and the tail are kept]\n"


class CappedSink:
    """Writes a stream to a file, keeping the first half of ``cap`` bytes as they come
    (so a human can watch them live) and the last half in memory until ``close``."""

    def __init__(self, path: str, cap: int):
        # O_NOFOLLOW: the file usually sits in the script's writable working directory,
        # where an earlier run could have planted a link to a file only we may write.
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        self.head_left = cap // 2
        self.tail_cap = cap - cap // 2
        self.tail = bytearray()
        self.total = 0
        self.dropped = 0
        self.broken = False  # disk full or similar: keep counting, stop writing

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self.head_left > 0:
            head, data = data[: self.head_left], data[self.head_left :]
            self.head_left -= len(head)
            self._write(head)
        if data:
            self.tail += data
            excess = len(self.tail) - self.tail_cap
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def close(self) -> None:
        if self.dropped:
            self._write(MARKER % self.dropped)
        self._write(bytes(self.tail))
        os.close(self.fd)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.broken:
            try:
                view = view[os.write(self.fd, view) :]
            except OSError:
                self.broken = True
