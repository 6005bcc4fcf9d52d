"""Memory: every finished node becomes an experience record; before each proposal the brain
is shown the most similar records of this run and of similar tasks in earlier runs.

``Memory`` is what the agent holds: the run's own records (in this process; rebuilt from
the graph on resume) and the user-level store that every run shares (``memory.path``), which
``--no-memory`` leaves out. Nothing from sealed labels enters either: a record holds plans,
changes, failures and the holdout scores the search itself uses.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MemoryConfig
from ..search.graph import Node, SearchGraph
from ..vocabulary import REFIT, RERUN
from .embed import Embedder, QueryVectors, load_embedder
from .experience import FAILED, FIRST, GAIN, NO_GAIN, Experience, ScoreSpread, TaskTraits, experience_of
from .retrieve import Retriever
from .store import MemoryStore

FAILED_GAIN = -0.5  # a move whose child failed: worse than no change, in score spreads
_PRIOR_RECORDS = 3000  # the newest improve records of similar tasks a prior is built from


@dataclass(frozen=True)
class Recall:
    """What a brain is shown before one proposal, each record as one bounded line."""

    this_run: tuple[str, ...] = ()
    other_tasks: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.this_run or self.other_tasks)


@dataclass(frozen=True)
class MovePrior:
    """What a recipe move did on similar tasks: a similarity-weighted count of tries, the mean
    gain in score spreads and the mean log run-time ratio to the parent."""

    weight: float
    gain: float
    log_cost: float


@dataclass
class Memory:
    run: str
    task: str
    traits: TaskTraits
    cfg: MemoryConfig = field(default_factory=MemoryConfig)
    shared: Retriever | None = None
    local: Retriever = field(default_factory=lambda: Retriever(MemoryStore()))
    warnings: list[str] = field(default_factory=list)
    _priors: dict[str, MovePrior] | None = None
    _spread: ScoreSpread = field(default_factory=ScoreSpread)

    @classmethod
    def open(cls, run: str, task: str, traits: TaskTraits, cfg: MemoryConfig, home: Path) -> Memory:
        """This run's memory; the shared store too when ``cfg.enabled``."""
        embedder: Embedder | None = load_embedder() if cfg.embeddings else None
        queries = QueryVectors(embedder) if embedder is not None else None  # one recall, one embedding
        memory = cls(run, task, traits, cfg, local=Retriever(MemoryStore(), embedder, queries))
        if cfg.embeddings and embedder is None:
            memory.warnings.append(
                "memory.embeddings is on but the [embeddings] extra is not installed: retrieval uses BM25 alone"
            )
        if cfg.enabled:
            path = Path(cfg.path).expanduser() if cfg.path else home / "memory.sqlite"
            memory.shared = Retriever(MemoryStore(path), embedder, queries)
        return memory

    def record(self, node: Node, graph: SearchGraph, code: str = "", columns: tuple[str, ...] = ()) -> Experience:
        """Make the record of a node that just finished and keep it (see ``remember``)."""
        exp = self._experience(node, graph, code, columns)
        self.remember(exp)
        return exp

    def replay(self, graph: SearchGraph, code_of: Callable[[Node], str], columns: tuple[str, ...] = ()) -> None:
        """On resume: rebuild this run's own memory from its finished nodes, in the order they
        ran (the shared store kept them when they finished)."""
        for node in graph:
            if node.finished and node.op not in (REFIT, RERUN):
                self.local.add(self._experience(node, graph, "" if node.ok else code_of(node), columns))

    def _experience(self, node: Node, graph: SearchGraph, code: str, columns: tuple[str, ...]) -> Experience:
        if node.ok and node.score is not None:
            self._spread.add(node.score)
        return experience_of(node, graph, self.run, self.task, self.traits, self._spread.value(), code, columns)

    def remember(self, exp: Experience) -> None:
        """Keep ``exp`` in this run's memory and in the shared store. A shared store that
        cannot be written (a full disk, a lock held too long) is dropped with a warning: the
        run goes on with its own memory."""
        self.local.add(exp)
        if self.shared is None:
            return
        try:
            self.shared.add(exp)
        except (sqlite3.Error, OSError) as exc:
            self.warnings.append(
                f"the memory store {self.shared.store.path} failed ({exc}); this run goes on without it"
            )
            self.shared = None

    def recall(self, query: str, skip: Set[str] = frozenset()) -> Recall:
        """The records most like ``query``: this run's (successes and failures, ``cfg.recall``
        of each, leaving out the nodes in ``skip``) and other runs' on similar tasks."""
        k = self.cfg.recall
        good = [e for e in self.local.search(query, k + len(skip), outcomes=(FIRST, GAIN)) if e.node not in skip]
        bad = [e for e in self.local.search(query, k + len(skip), outcomes=(FAILED, NO_GAIN)) if e.node not in skip]
        this_run = tuple(e.line() for e in [*good[:k], *bad[:k]])
        return Recall(this_run, tuple(e.line() for e in self.similar(query)))

    def similar(self, query: str) -> list[Experience]:
        """Other runs' records that match ``query``, on tasks within ``cfg.max_distance``."""
        if self.shared is None or not self.cfg.similar:
            return []
        try:
            found = self.shared.search(
                query, 8 * self.cfg.similar, exclude_run=self.run, task_type=self.traits.task_type
            )
        except sqlite3.Error:
            return []
        near = [e for e in found if e.traits.distance(self.traits) <= self.cfg.max_distance]
        return near[: self.cfg.similar]

    def move_priors(self) -> dict[str, MovePrior]:
        """Per recipe move, what it did on similar tasks in other runs (computed once a run)."""
        if self._priors is not None:
            return self._priors
        priors: dict[str, list[tuple[float, float, float | None]]] = {}
        records = []
        if self.shared is not None:
            try:
                records = self.shared.store.recent(
                    _PRIOR_RECORDS, exclude_run=self.run, task_type=self.traits.task_type, op="improve"
                )
            except sqlite3.Error:
                records = []
        for _, exp in records:
            distance = exp.traits.distance(self.traits)
            if not exp.move or distance > self.cfg.max_distance:
                continue
            gain = FAILED_GAIN if exp.outcome == FAILED else exp.gain_spreads
            if gain is None:
                continue
            names = exp.move.split("+")
            cost = math.log(max(exp.cost_ratio, 1e-3)) / len(names) if exp.cost_ratio else None
            for name in names:  # a pair's result is credited to each of its moves, split evenly
                priors.setdefault(name, []).append((1.0 / (1.0 + distance), gain / len(names), cost))
        self._priors = {name: _weighted(rows) for name, rows in priors.items()}
        return self._priors


def _weighted(rows: list[tuple[float, float, float | None]]) -> MovePrior:
    weight = sum(w for w, _, _ in rows)
    costs = [(w, c) for w, _, c in rows if c is not None]
    cost_weight = sum(w for w, _ in costs)
    return MovePrior(
        weight=round(weight, 6),
        gain=sum(w * g for w, g, _ in rows) / weight,
        log_cost=sum(w * c for w, c in costs) / cost_weight if cost_weight else 0.0,
    )


__all__ = [
    "FAILED_GAIN",
    "Experience",
    "Memory",
    "MemoryStore",
    "MovePrior",
    "Recall",
    "Retriever",
    "TaskTraits",
    "experience_of",
]
