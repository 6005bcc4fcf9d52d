"""The experience store: SQLite with an FTS5 index, safe for several writers at once.

One file holds the records of every run that used it (``memory.path``, by default
``~/.mlguild/memory.sqlite``); a run also keeps an in-memory store of its own records. Writes
are short ``BEGIN IMMEDIATE`` transactions in WAL mode with a busy timeout, so two runs (or
two workers) writing at the same time wait for each other instead of failing or corrupting
the file. A record is keyed by (run, node): recording a node again replaces it.

Beside the records, the store keeps the repairs an LLM made of recipe scripts (``repairs``):
the failed script and the repaired one, keyed by task, recipe and what failed (the newest
repair of the same failure replaces the older), so that the next run's drafts of that recipe
carry the repair without asking an LLM again (mlguild.brains.repair_port).

It keeps too how long the final refits took against their nodes' runs in the search
(``refits``: a refit's scale, per model family), so that the next run's reserve for its
final stage starts from what refits of that family measured (mlguild.run.reserve).
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..util.sqlite import connect, create, fts_match, writing
from .experience import Experience, TaskTraits

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiences (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    node TEXT NOT NULL,
    task TEXT NOT NULL,
    op TEXT NOT NULL,
    outcome TEXT NOT NULL,
    move TEXT NOT NULL,
    task_type TEXT NOT NULL,
    metric TEXT NOT NULL,
    created REAL NOT NULL,
    record TEXT NOT NULL,
    UNIQUE (run, node)
);
CREATE INDEX IF NOT EXISTS experiences_task_type ON experiences (task_type, op);
CREATE VIRTUAL TABLE IF NOT EXISTS experiences_fts USING fts5(body, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, model TEXT NOT NULL, vec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS repairs (
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    recipe TEXT NOT NULL,
    failure TEXT NOT NULL,
    run TEXT NOT NULL,
    node TEXT NOT NULL,
    failed_code TEXT NOT NULL,
    fixed_code TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (task, recipe, failure)
);
CREATE TABLE IF NOT EXISTS refits (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    node TEXT NOT NULL,
    task TEXT NOT NULL,
    family TEXT NOT NULL,
    rows INTEGER NOT NULL,
    scale REAL NOT NULL,
    created REAL NOT NULL,
    UNIQUE (run, node)
);
CREATE INDEX IF NOT EXISTS refits_family ON refits (family, id);
"""


class MemoryStore:
    """Experience records in SQLite. ``path`` ":memory:" keeps them in this process only."""

    def __init__(self, path: str | Path = ":memory:", timeout_s: float = 30.0):
        self.path = str(path)
        if self.path != ":memory:":
            try:
                Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"cannot create the memory store's folder for {self.path}: {exc}",
                    "set memory.path to a writable file, or run with --no-memory",
                ) from exc
        try:
            self._db = connect(self.path, timeout_s)
            create(self._db, _SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"the memory store {self.path} cannot be used: {exc}",
                "move the file away (a new one is made), set memory.path elsewhere, or run with --no-memory",
            ) from exc

    def close(self) -> None:
        self._db.close()

    def _write(self) -> AbstractContextManager[None]:
        return writing(self._db)

    # ------------------------------------------------------------------ writing

    def add(self, exp: Experience, vector: bytes | None = None, model: str = "") -> int:
        """Store ``exp`` (replacing the record of the same run and node); return its id."""
        with self._write():
            old = self._db.execute("SELECT id FROM experiences WHERE run = ? AND node = ?", (exp.run, exp.node))
            row = old.fetchone()
            if row is not None:
                self._delete_ids([row[0]])
            cursor = self._db.execute(
                "INSERT INTO experiences (run, node, task, op, outcome, move, task_type, metric, created, record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    exp.run,
                    exp.node,
                    exp.task,
                    exp.op,
                    exp.outcome,
                    exp.move,
                    exp.traits.task_type,
                    exp.traits.metric,
                    time.time(),
                    json.dumps(exp.to_dict()),
                ),
            )
            new_id = int(cursor.lastrowid or 0)
            self._db.execute("INSERT INTO experiences_fts (rowid, body) VALUES (?, ?)", (new_id, exp.text()))
            if vector is not None:
                self._db.execute("INSERT INTO vectors (id, model, vec) VALUES (?, ?, ?)", (new_id, model, vector))
        return new_id

    def forget(self, *, run: str | None = None, task: str | None = None, ids: list[int] | None = None) -> int:
        """Delete the records of a run, of a task, or with these ids; return how many."""
        where, args = _filters(run=run, task=task, ids=ids)
        if not where:
            raise ValueError("forget needs a run, a task or ids")
        with self._write():
            found = [r[0] for r in self._db.execute(f"SELECT id FROM experiences e WHERE {where}", args)]
            self._delete_ids(found)
            for column, value in (("run", run), ("task", task)):  # a forgotten run's repairs and refits go too
                if value is not None:
                    self._db.execute(f"DELETE FROM repairs WHERE {column} = ?", (value,))
                    self._db.execute(f"DELETE FROM refits WHERE {column} = ?", (value,))
        return len(found)

    def add_repair(self, repair: StoredRepair) -> None:
        """Keep ``repair``, replacing the one of the same task, recipe and failure."""
        with self._write():
            self._db.execute(
                "INSERT OR REPLACE INTO repairs (task, recipe, failure, run, node, failed_code, fixed_code, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    repair.task,
                    repair.recipe,
                    repair.failure,
                    repair.run,
                    repair.node,
                    repair.failed_code,
                    repair.fixed_code,
                    time.time(),
                ),
            )

    def add_refit(self, refit: StoredRefit) -> None:
        """Keep how long a final refit took against its node's run (replacing the same node's)."""
        with self._write():
            self._db.execute(
                "INSERT OR REPLACE INTO refits (run, node, task, family, rows, scale, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (refit.run, refit.node, refit.task, refit.family, refit.rows, refit.scale, time.time()),
            )

    def refits(self, rows: int, within: float, exclude_run: str = "", limit: int = 500) -> list[tuple[str, str, float]]:
        """The newest ``limit`` refits of other runs on tasks whose training rows are within a
        factor ``within`` of ``rows``: (family, task, scale), newest first."""
        cursor = self._db.execute(
            "SELECT family, task, scale FROM refits WHERE run != ? AND rows BETWEEN ? AND ? ORDER BY id DESC LIMIT ?",
            (exclude_run, rows / within, rows * within, limit),
        )
        return [(str(name), str(task), float(scale)) for name, task, scale in cursor]

    def repairs(self, task: str, exclude_run: str | None = None, limit: int = 20) -> list[StoredRepair]:
        """The repairs of ``task``'s recipe scripts, newest first (less those of ``exclude_run``)."""
        rows = self._db.execute(
            "SELECT task, recipe, failure, run, node, failed_code, fixed_code FROM repairs"
            " WHERE task = ? AND run != ? ORDER BY created DESC, id DESC LIMIT ?",
            (task, exclude_run or "", limit),
        )
        return [StoredRepair(*row) for row in rows]

    def _delete_ids(self, ids: list[int]) -> None:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for table, key in (("experiences", "id"), ("experiences_fts", "rowid"), ("vectors", "id")):
                self._db.execute(f"DELETE FROM {table} WHERE {key} IN ({marks})", chunk)

    # ------------------------------------------------------------------ reading

    def count(self, **filters: Any) -> int:
        where, args = _filters(**filters)
        return int(self._db.execute(f"SELECT count(*) FROM experiences e WHERE {where or '1'}", args).fetchone()[0])

    def get(self, record_id: int) -> Experience | None:
        row = self._db.execute("SELECT record FROM experiences WHERE id = ?", (record_id,)).fetchone()
        return _record(row[0]) if row else None

    def recent(self, limit: int = 50, **filters: Any) -> list[tuple[int, Experience]]:
        """The newest records first."""
        where, args = _filters(**filters)
        rows = self._db.execute(
            f"SELECT id, record FROM experiences e WHERE {where or '1'} ORDER BY id DESC LIMIT ?", [*args, limit]
        )
        return [(r[0], _record(r[1])) for r in rows]

    def search(self, query: str, limit: int = 20, **filters: Any) -> list[tuple[int, Experience]]:
        """Records matching any word of ``query``, best BM25 match first."""
        ids = self.search_ids(query, limit, **filters)
        found = self.records(ids)
        return [(i, found[i]) for i in ids if i in found]

    def search_ids(self, query: str, limit: int = 20, **filters: Any) -> list[int]:
        """The ids of ``search``'s records, without reading the records."""
        match = fts_match(query)
        if not match:
            return []
        where, args = _filters(**filters)
        if not where:  # no join needed: the index alone ranks
            rows = self._db.execute(
                "SELECT rowid FROM experiences_fts WHERE experiences_fts MATCH ? ORDER BY bm25(experiences_fts), rowid LIMIT ?",
                [match, limit],
            )
        else:
            rows = self._db.execute(
                "SELECT e.id FROM experiences_fts f JOIN experiences e ON e.id = f.rowid"
                f" WHERE experiences_fts MATCH ? AND {where} ORDER BY bm25(experiences_fts), e.id LIMIT ?",
                [match, *args, limit],
            )
        return [r[0] for r in rows]

    def ids(self, **filters: Any) -> list[int]:
        where, args = _filters(**filters)
        return [r[0] for r in self._db.execute(f"SELECT e.id FROM experiences e WHERE {where or '1'}", args)]

    def vectors(self, model: str, after_id: int = 0, **filters: Any) -> list[tuple[int, bytes]]:
        """Stored embeddings of ``model`` with ids above ``after_id``, oldest first."""
        where, args = _filters(**filters)
        rows = self._db.execute(
            "SELECT v.id, v.vec FROM vectors v JOIN experiences e ON e.id = v.id"
            f" WHERE v.model = ? AND v.id > ? {'AND ' + where if where else ''} ORDER BY v.id",
            [model, after_id, *args],
        )
        return [(r[0], r[1]) for r in rows]

    def records(self, ids: list[int]) -> dict[int, Experience]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(f"SELECT id, record FROM experiences WHERE id IN ({marks})", ids)
        return {r[0]: _record(r[1]) for r in rows}

    def runs(self) -> list[dict[str, Any]]:
        """One row per run: its task, how many records, when the last was written."""
        rows = self._db.execute(
            "SELECT run, task, task_type, metric, count(*), max(created) FROM experiences GROUP BY run ORDER BY max(created) DESC"
        )
        keys = ("run", "task", "task_type", "metric", "records", "last")
        return [dict(zip(keys, r, strict=True)) for r in rows]


@dataclass(frozen=True)
class StoredRepair:
    """An LLM's repair of a recipe script in some run: what failed, before and after."""

    task: str
    recipe: str
    failure: str  # what failed: the diagnosis's one line (mlguild.coder.diagnose)
    run: str
    node: str  # the repairing node
    failed_code: str
    fixed_code: str


@dataclass(frozen=True)
class StoredRefit:
    """A final refit of some run: its node's model ``family`` (mlguild.run.reserve), the
    task's training rows, and its ``scale``: the refit's seconds over its node's seconds in
    the search times the growth of the training file."""

    run: str
    node: str
    task: str
    family: str
    rows: int
    scale: float


def _filters(
    *,
    run: str | None = None,
    exclude_run: str | None = None,
    task: str | None = None,
    task_type: str | None = None,
    op: str | None = None,
    outcomes: tuple[str, ...] | None = None,
    ids: list[int] | None = None,
) -> tuple[str, list[Any]]:
    """A WHERE clause over ``experiences e`` (empty: no filter) and its arguments."""
    parts: list[str] = []
    args: list[Any] = []
    for column, value in (("run", run), ("task", task), ("task_type", task_type), ("op", op)):
        if value is not None:
            parts.append(f"e.{column} = ?")
            args.append(value)
    if exclude_run is not None:
        parts.append("e.run != ?")
        args.append(exclude_run)
    if outcomes:
        parts.append(f"e.outcome IN ({','.join('?' * len(outcomes))})")
        args.extend(outcomes)
    if ids is not None:
        parts.append(f"e.id IN ({','.join('?' * len(ids)) or 'NULL'})")
        args.extend(ids)
    return " AND ".join(parts), args


def _record(text: str) -> Experience:
    return Experience.from_dict(json.loads(text))


__all__ = ["MemoryStore", "StoredRefit", "StoredRepair", "TaskTraits"]
