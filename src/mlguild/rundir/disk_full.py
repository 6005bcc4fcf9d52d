"""A disk that fills up while a run works: one line naming it and the resume command, never a
``sqlite3.OperationalError`` traceback.

A full disk is the machine's problem, not the run's, and nothing of the run is lost to it:
the journal is appended and fsynced record by record (a torn last line is repaired when the
run is opened), node files and ``best/`` are written whole or not at all, and SQLite rolls a
failed transaction back. So once space is freed, ``mlguild resume`` continues where the run
stopped: a node that was cut off is run again, finished ones are kept.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import RunError

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFull(RunError):
    """The disk a run writes to is full; the run can be resumed once space is freed."""


def full_disk_detail(exc: BaseException) -> str | None:
    """What filled up, when ``exc`` says a disk is full (a plain write's ENOSPC or EDQUOT, or
    SQLite's "database or disk is full"); None for any other error."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        return f"{exc.strerror or 'no space left on device'}" + (f" writing {exc.filename}" if exc.filename else "")
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc):
        return f"SQLite: {exc}"
    return None


@contextmanager
def resumable_when_full(run_path: Path) -> Iterator[None]:
    """Turn a full disk met while the run at ``run_path`` works into a DiskFull that names the
    disk's folder and how to continue; any other error passes unchanged."""
    try:
        yield
    except (OSError, sqlite3.OperationalError) as exc:
        detail = full_disk_detail(exc)
        if detail is None:
            raise
        raise DiskFull(
            f"the disk holding {run_path.parent} is full ({detail}); the run stopped, its finished nodes are kept",
            f"free space on that disk, then continue the run: `mlguild resume {run_path}`",
        ) from None
