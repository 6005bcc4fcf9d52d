"""Memory: every finished node becomes an experience record; before each proposal the brain
is shown the most similar records of this run and of similar tasks in earlier runs.

``Memory`` is what the agent holds: the run's own records (in this process; rebuilt from
the graph on resume) and the user-level store that every run shares (``memory.path``), which
``--no-memory`` leaves out. Nothing from sealed labels enters either: a record holds plans,
changes, failures and the holdout scores the search itself uses.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..coder.diagnose import diagnose
from ..config import MemoryConfig
from ..core.graph import Node, SearchGraph
from ..core.recall import Recall
from ..core.vocabulary import Op
from .embed import Embedder, QueryVectors, load_embedder
from .experience import FAILED, FIRST, GAIN, NO_GAIN, Experience, ScoreSpread, TaskTraits, experience_of
from .priors import (
    FAILED_GAIN,
    EarlierBest,
    MovePrior,
    Transfer,
    earlier_bests,
    family_configs,
    family_priors,
    measure_transfer,
    move_priors,
)
from .retrieve import Retriever
from .store import MemoryStore, StoredRefit, StoredRepair

_PRIOR_RECORDS = 5000  # the newest records of tasks of this type the priors are built from
# A refit's scale carries to tasks whose training rows are within this factor of this one's
# (a refit of a few thousand rows is mostly start-up; of a million, mostly fitting), the
# newest this many per model family.
_REFIT_ROWS_WITHIN = 3.0
_REFIT_RECORDS = 5


@dataclass
class Memory:
    run: str
    task: str
    traits: TaskTraits
    cfg: MemoryConfig = field(default_factory=MemoryConfig)
    name: str = ""  # the task's name for people and prompts (``task`` is its data's key)
    shared: Retriever | None = None
    local: Retriever = field(default_factory=lambda: Retriever(MemoryStore()))
    warnings: list[str] = field(default_factory=list)
    _records: list[Experience] | None = None
    _transfer: Transfer | None = None
    _move_priors: dict[str, MovePrior] | None = None
    _family_priors: dict[str, MovePrior] | None = None
    _family_configs: dict[str, tuple[tuple[float, dict[str, Any]], ...]] | None = None
    _earlier_bests: list[EarlierBest] | None = None
    _refit_scales: tuple[dict[str, list[float]], dict[str, list[float]]] | None = None
    _spread: ScoreSpread = field(default_factory=ScoreSpread)
    # Workers recall (a planner, at proposal time) while another records: one at a time.
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _code_of: Callable[[Node], str] | None = None  # a node's script (kept by ``replay``), for its repair

    @classmethod
    def open(cls, run: str, task: str, traits: TaskTraits, cfg: MemoryConfig, home: Path, name: str = "") -> Memory:
        """This run's memory; the shared store too when ``cfg.enabled``. ``task`` is the task's
        key (its data's, mlguild.task.identity), ``name`` the name its records show."""
        embedder: Embedder | None = load_embedder() if cfg.embeddings else None
        queries = QueryVectors(embedder) if embedder is not None else None  # one recall, one embedding
        memory = cls(run, task, traits, cfg, name=name, local=Retriever(MemoryStore(), embedder, queries))
        if cfg.embeddings and embedder is None:
            memory.warnings.append(
                "memory.embeddings is on but the [embeddings] extra is not installed: retrieval uses BM25 alone"
            )
        if cfg.enabled:
            path = Path(cfg.path).expanduser() if cfg.path else home / "memory.sqlite"
            memory.shared = Retriever(MemoryStore(path), embedder, queries)
        return memory

    def record(self, node: Node, graph: SearchGraph, code: str = "", columns: tuple[str, ...] = ()) -> Experience:
        """Make the record of a node that just finished and keep it (see ``remember``); a
        repair an LLM made of a recipe script is kept in the shared store too (``keep_repair``)."""
        exp = self._experience(node, graph, code, columns)
        self.remember(exp)
        self.keep_repair(node, graph, columns)
        return exp

    def replay(self, graph: SearchGraph, code_of: Callable[[Node], str], columns: tuple[str, ...] = ()) -> None:
        """On resume: rebuild this run's own memory from its finished nodes, in the order they
        ran (the shared store kept them when they finished). ``code_of`` is kept: it reads the
        scripts of a repair ``record`` keeps."""
        self._code_of = code_of
        for node in graph:
            if node.finished and node.op not in (Op.REFIT, Op.RERUN):
                self.local.add(self._experience(node, graph, "" if node.ok else code_of(node), columns))

    def _experience(self, node: Node, graph: SearchGraph, code: str, columns: tuple[str, ...]) -> Experience:
        if node.ok and node.score is not None:
            self._spread.add(node.score)
        spread = self._spread.value()
        return experience_of(node, graph, self.run, self.task, self.traits, spread, code, columns, self.name)

    def remember(self, exp: Experience) -> None:
        """Keep ``exp`` in this run's memory and in the shared store. A shared store that
        cannot be written (a full disk, a lock held too long) is dropped with a warning: the
        run goes on with its own memory."""
        with self._lock:
            self.local.add(exp)
            if self.shared is None:
                return
            try:
                self.shared.add(exp)
            except (sqlite3.Error, OSError) as exc:
                self._drop_shared(exc)

    def _drop_shared(self, exc: Exception) -> None:
        assert self.shared is not None
        self.warnings.append(f"the memory store {self.shared.store.path} failed ({exc}); this run goes on without it")
        self.shared = None

    def keep_repair(self, node: Node, graph: SearchGraph, columns: tuple[str, ...] = ()) -> StoredRepair | None:
        """When ``node`` is an LLM's scored repair of a failed recipe script, keep the two
        scripts in the shared store, keyed by task, recipe and what failed, for the next
        runs' drafts of that recipe (mlguild.brains.repair_port)."""
        parent = repaired_recipe(node, graph)
        if parent is None or self.shared is None or self._code_of is None:
            return None
        failed, fixed = self._code_of(parent), self._code_of(node)
        if not failed.strip() or not fixed.strip():
            return None
        what = diagnose(parent.failure or "", failed, columns).summary()[:240]
        repair = StoredRepair(self.task, str(parent.meta["recipe"]), what, self.run, node.id, failed, fixed)
        with self._lock:
            try:
                self.shared.store.add_repair(repair)
            except (sqlite3.Error, OSError) as exc:
                self._drop_shared(exc)
                return None
        return repair

    def repairs(self) -> list[StoredRepair]:
        """Earlier runs' repairs of this task's recipe scripts, newest first."""
        if self.shared is None:
            return []
        with self._lock:
            try:
                return self.shared.store.repairs(self.task, exclude_run=self.run)
            except sqlite3.Error:
                return []

    def keep_refit(self, node: str, family: str, rows: int, scale: float) -> None:
        """Keep in the shared store how long a final refit of a ``family`` model took: its
        ``scale`` (mlguild.run.reserve.refit_scale) on a task of ``rows`` training rows."""
        if self.shared is None:
            return
        with self._lock:
            try:
                self.shared.store.add_refit(StoredRefit(self.run, node, self.task, family, rows, scale))
            except (sqlite3.Error, OSError) as exc:
                self._drop_shared(exc)

    def refit_scales(self, rows: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        """Per model family, the scales other runs' refits measured on tasks about this size
        (``rows`` training rows), newest first: those on this very task, and those on others
        (read once a run)."""
        if self._refit_scales is None:
            found: list[tuple[str, str, float]] = []
            if self.shared is not None:
                with self._lock:
                    try:
                        found = self.shared.store.refits(rows, _REFIT_ROWS_WITHIN, exclude_run=self.run)
                    except sqlite3.Error:
                        pass
            same: dict[str, list[float]] = {}
            others: dict[str, list[float]] = {}
            for family, task, scale in found:
                kept = (same if task == self.task else others).setdefault(family, [])
                if len(kept) < _REFIT_RECORDS:
                    kept.append(scale)
            self._refit_scales = (same, others)
        return self._refit_scales

    def recall(self, query: str, skip: Set[str] = frozenset()) -> Recall:
        """The records most like ``query``: this run's (successes and failures, ``cfg.recall``
        of each, leaving out the nodes in ``skip``) and other runs' on similar tasks; another
        task's record says its weight (``weighted``), and the recall how that weight is measured."""
        k = self.cfg.recall
        with self._lock:
            good = [e for e in self.local.search(query, k + len(skip), outcomes=(FIRST, GAIN)) if e.node not in skip]
            bad = [e for e in self.local.search(query, k + len(skip), outcomes=(FAILED, NO_GAIN)) if e.node not in skip]
            similar = self.weighted(self.similar(query))
        this_run = tuple(e.line() for e in [*good[:k], *bad[:k]])
        others = tuple(e.line(source=True) + ("" if e.task == self.task else f" (weight {w:.2f})") for e, w in similar)
        note = ""
        if any(e.task != self.task for e, _ in similar):
            t = self.transfer()
            note = (
                f"A record of another task counts here by its weight: its similarity to this task, 1/(1+distance), "
                f"times the measured transfer of gains between tasks ({t.gain:.2f}, over {t.pairs} task-move pairs)."
            )
        return Recall(this_run, others, note)

    def weighted(self, records: list[Experience]) -> list[tuple[Experience, float]]:
        """Each record with how much it counts for this task: 1 for an earlier run of this
        task; for another task, its similarity, 1 / (1 + distance), times the measured
        transfer of gains (mlguild.memory.priors)."""
        return [(exp, self.weight_of(exp)) for exp in records]

    def weight_of(self, exp: Experience) -> float:
        return record_weight(exp, self.task, self.traits, self.transfer())

    def similar(self, query: str) -> list[Experience]:
        """Other runs' records that match ``query``, on tasks within ``cfg.max_distance``:
        those of this very task first (earlier runs on it count in full), then other tasks'
        only as far as the store's measured transfer of gains earns them a place (none
        until it is measured: what scored well on an unrelated task says little here)."""
        if self.shared is None or not self.cfg.similar:
            return []
        try:
            found = self.shared.search(
                query, 8 * self.cfg.similar, exclude_run=self.run, task_type=self.traits.task_type
            )
        except sqlite3.Error:
            return []
        near = [e for e in found if e.traits.distance(self.traits) <= self.cfg.max_distance]
        same = [e for e in near if e.task == self.task]
        others = [e for e in near if e.task != self.task][: round(self.cfg.similar * self.transfer().gain)]
        return [*same, *others][: self.cfg.similar]

    def transfer(self) -> Transfer:
        """How far the store's tasks foretell each other's results (computed once a run)."""
        if self._transfer is None:
            self._transfer = measure_transfer(self._prior_records(), self.task, self.cfg.max_distance)
        return self._transfer

    def move_priors(self) -> dict[str, MovePrior]:
        """Per recipe move, what it did on similar tasks in other runs (computed once a run)."""
        if self._move_priors is None:
            records, distance = self._prior_records(), self.cfg.max_distance
            self._move_priors = move_priors(records, self.traits, distance, self.task, self.transfer())
        return self._move_priors

    def family_priors(self) -> dict[str, MovePrior]:
        """Per recipe family, how it ranked among the families of other runs on similar tasks."""
        if self._family_priors is None:
            records, distance = self._prior_records(), self.cfg.max_distance
            self._family_priors = family_priors(records, self.traits, distance, self.task, self.transfer())
        return self._family_priors

    def family_configs(self) -> dict[str, tuple[tuple[float, dict[str, Any]], ...]]:
        """Per recipe family, its best parameters in other runs on similar tasks, with their
        similarity weights (computed once a run): where tuning starts."""
        if self._family_configs is None:
            self._family_configs = family_configs(self._prior_records(), self.traits, self.cfg.max_distance)
        return self._family_configs

    def earlier_bests(self) -> list[EarlierBest]:
        """The configurations that made the best nodes of earlier runs on this very task, best
        first (computed once a run): what a recipe brain makes again before exploring."""
        if self._earlier_bests is None:
            self._earlier_bests = earlier_bests(self._prior_records(), self.task, self.traits)
        return self._earlier_bests

    def _prior_records(self) -> list[Experience]:
        """The newest records of other runs on tasks of this type (read once a run)."""
        if self._records is None:
            self._records = []
            if self.shared is not None:
                try:
                    self._records = prior_records(self.shared.store, self.traits.task_type, self.run)
                except sqlite3.Error:
                    pass
        return self._records


def record_weight(exp: Experience, task: str, traits: TaskTraits, transfer: Transfer) -> float:
    """How much another run's record counts for ``task``: 1 for a run of this very task; for
    another task, its similarity, 1 / (1 + distance), times the measured transfer of gains
    between the store's tasks (0 until the store shows that gains carry over)."""
    if exp.task == task:
        return 1.0
    return round(transfer.gain / (1.0 + exp.traits.distance(traits)), 4)


def repaired_recipe(node: Node, graph: SearchGraph) -> Node | None:
    """The failed recipe script ``node`` repaired, when ``node`` is a scored repair that
    another brain (an LLM) wrote of a script the recipes wrote; else None."""
    parent = graph.nodes.get(node.parents[0]) if node.parents else None
    if node.op != Op.DEBUG or not node.ok or node.meta.get("recipe") or parent is None:
        return None
    if parent.ok or not parent.meta.get("recipe") or parent.meta.get("brain") != "recipes":
        return None
    return parent


def prior_records(store: MemoryStore, task_type: str, exclude_run: str | None = None) -> list[Experience]:
    """The records a run's priors are built from: the newest ``_PRIOR_RECORDS`` of tasks of
    ``task_type``, less those of the run itself."""
    return [exp for _, exp in store.recent(_PRIOR_RECORDS, exclude_run=exclude_run, task_type=task_type)]


__all__ = [
    "FAILED_GAIN",
    "EarlierBest",
    "Experience",
    "Memory",
    "MemoryStore",
    "MovePrior",
    "Recall",
    "Retriever",
    "StoredRefit",
    "StoredRepair",
    "TaskTraits",
    "Transfer",
    "experience_of",
    "prior_records",
    "record_weight",
    "repaired_recipe",
]
