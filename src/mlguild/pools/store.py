"""The run's pools in one SQLite file, ``<run>/pools.sqlite``: keyed JSON values with a
full-text index, in named tables ("reports", "ideas", "extracted").

Several workers of a run (threads, processes, or Ray workers on a shared disk) read and write
it at once: writes are short ``BEGIN IMMEDIATE`` transactions in WAL mode, and putting a key
again replaces its value and its indexed text in the same transaction.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..util.sqlite import connect, create, fts_match, writing

FILE = "pools.sqlite"
TABLES = ("reports", "ideas", "extracted")


def _schema(table: str) -> str:
    return f"""
CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS {table}_fts USING fts5(body, tokenize = 'porter unicode61');
"""


class PoolStore:
    def __init__(self, path: str | Path = ":memory:", timeout_s: float = 30.0):
        self.path = str(path)
        self._db = connect(self.path, timeout_s)
        self._lock = threading.Lock()  # one connection shared by this process's threads
        create(self._db, "".join(_schema(t) for t in TABLES))

    @classmethod
    def of_run(cls, run_dir: Path) -> PoolStore:
        return cls(run_dir / FILE)

    def close(self) -> None:
        self._db.close()

    def put(self, table: str, key: str, value: str, body: str = "") -> None:
        """Set ``key`` to ``value``, indexed by ``body`` for ``search``."""
        _check(table)
        with self._lock, writing(self._db):
            row = self._db.execute(f"SELECT id FROM {table} WHERE key = ?", (key,)).fetchone()
            if row is not None:
                self._db.execute(f"DELETE FROM {table}_fts WHERE rowid = ?", (row[0],))
                self._db.execute(f"UPDATE {table} SET value = ? WHERE id = ?", (value, row[0]))
                rowid = row[0]
            else:
                rowid = self._db.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, value)).lastrowid
            self._db.execute(f"INSERT INTO {table}_fts (rowid, body) VALUES (?, ?)", (rowid, body))

    def value(self, table: str, key: str) -> str:
        _check(table)
        with self._lock:
            row = self._db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(f"{table}: {key}")
        return str(row[0])

    def keys(self, table: str) -> list[str]:
        """Every key, oldest first."""
        _check(table)
        with self._lock:
            return [r[0] for r in self._db.execute(f"SELECT key FROM {table} ORDER BY id")]

    def search(self, table: str, query: str, limit: int) -> list[str]:
        """The keys whose indexed text best matches any word of ``query`` (BM25), best first."""
        _check(table)
        match = fts_match(query)
        if not match:
            return []
        with self._lock:
            rows = self._db.execute(
                f"SELECT t.key FROM {table}_fts f JOIN {table} t ON t.id = f.rowid"
                f" WHERE {table}_fts MATCH ? ORDER BY bm25({table}_fts), t.id LIMIT ?",
                (match, limit),
            )
            return [r[0] for r in rows]

    def scores(self, table: str, query: str) -> dict[str, float]:
        """Every matching key's BM25 relevance to ``query``, larger is more relevant."""
        _check(table)
        match = fts_match(query)
        if not match:
            return {}
        with self._lock:
            rows = self._db.execute(
                f"SELECT t.key, bm25({table}_fts) FROM {table}_fts f JOIN {table} t ON t.id = f.rowid"
                f" WHERE {table}_fts MATCH ?",
                (match,),
            )
            return {r[0]: -float(r[1]) for r in rows}  # FTS5's bm25 is negative: smaller is better


def _check(table: str) -> None:
    if table not in TABLES:  # table names are put in SQL text: only known ones
        raise ValueError(f"unknown pool table {table!r}")
