"""What every SQLite store of mlguild shares: a connection safe for several writers (WAL, a
busy timeout, explicit short ``BEGIN IMMEDIATE`` transactions) and a full-text query that no
word can turn into FTS5 syntax."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_WORD = re.compile(r"[A-Za-z0-9_]{2,}")
MAX_TERMS = 40  # words of a query the index is asked about (a long plan is cut)


def connect(path: str | Path, timeout_s: float = 30.0) -> sqlite3.Connection:
    """A connection to ``path`` (":memory:" for this process only), usable from any thread of
    this process; writers elsewhere wait up to ``timeout_s`` for each other."""
    memory = str(path) == ":memory:"
    db = sqlite3.connect(
        str(path) if memory else str(Path(path).expanduser()),
        timeout=timeout_s,
        isolation_level=None,  # transactions are explicit (see ``writing``)
        check_same_thread=False,
    )
    db.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
    if not memory:
        db.execute("PRAGMA journal_mode = WAL")
    return db


@contextmanager
def writing(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at once (``BEGIN IMMEDIATE``) so that two writers queue
    instead of one failing halfway."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def create(db: sqlite3.Connection, schema: str) -> None:
    """Run ``schema``'s statements in one transaction (executescript would commit on its own)."""
    with writing(db):
        for statement in filter(str.strip, schema.split(";")):
            db.execute(statement)


def fts_match(query: str) -> str:
    """An FTS5 MATCH expression for any word of ``query``, each quoted; "" when it has none."""
    terms = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))[:MAX_TERMS]
    return " OR ".join(f'"{t}"' for t in terms)
