"""Retrieval: the records most like a query, by BM25 over SQLite FTS5 and, when an embedder
is given, by cosine similarity of sentence embeddings, the two rankings fused by reciprocal
rank (each list adds 1 / (60 + rank) to a record's score)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .embed import Embedder, QueryVectors, from_blobs, to_blob
from .experience import Experience
from .store import MemoryStore

RRF_K = 60  # the usual constant: a rank-1 hit in one list outweighs rank 10 in both
_CANDIDATES = 50  # from each ranking, before fusing


class Retriever:
    """Searches ``store``; with ``embedder``, also embeds what it stores and fuses rankings.
    Retrievers given the same ``queries`` embed a query once between them."""

    def __init__(self, store: MemoryStore, embedder: Embedder | None = None, queries: QueryVectors | None = None):
        self.store, self.embedder = store, embedder
        self._ids = np.zeros(0, dtype=np.int64)  # embedded records held in memory, oldest first
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self.queries = queries or (QueryVectors(embedder) if embedder is not None else None)
        self._masks: dict[str, np.ndarray] = {}  # per filter, which held records it allows

    def add(self, exp: Experience) -> int:
        vector = self.embedder.encode([exp.text()])[0] if self.embedder is not None else None
        model = self.embedder.model if self.embedder is not None else ""
        return self.store.add(exp, to_blob(vector) if vector is not None else None, model)

    def search(self, query: str, k: int, **filters: Any) -> list[Experience]:
        """The ``k`` records that best match ``query`` among those ``filters`` allow."""
        ranked = [self.store.search_ids(query, _CANDIDATES, **filters)]
        if self.queries is not None and query.strip():
            ranked.append(self._nearest(self.queries.get(query), _CANDIDATES, filters))
        fused: dict[int, float] = {}
        for ranking in ranked:
            for rank, record_id in enumerate(ranking, start=1):
                fused[record_id] = fused.get(record_id, 0.0) + 1.0 / (RRF_K + rank)
        best = sorted(fused, key=lambda i: (-fused[i], -i))[:k]
        found = self.store.records(best)
        return [found[i] for i in best if i in found]

    def _nearest(self, vector: np.ndarray, k: int, filters: dict[str, Any]) -> list[int]:
        self._refresh()
        if not len(self._ids):
            return []
        if filters:
            key = repr(sorted(filters.items()))
            cached = self._masks.get(key)
            if cached is None or len(cached) != len(self._ids):  # new records since: recompute
                cached = np.isin(self._ids, np.array(self.store.ids(**filters), dtype=np.int64))
                self._masks[key] = cached
            mask = cached
        else:
            mask = np.ones(len(self._ids), dtype=bool)
        if not mask.any():
            return []
        # Similarities of every held record, then the allowed ones: indexing the matrix by the
        # mask first would copy it (megabytes at 10,000 records) on every search.
        sims = (self._matrix @ vector)[mask]
        allowed = self._ids[mask]
        if len(sims) > k:  # the k best without sorting them all, then those k in order
            best = np.argpartition(-sims, k - 1)[:k]
            top = best[np.lexsort((allowed[best], -sims[best]))]
        else:
            top = np.lexsort((allowed, -sims))
        return [int(allowed[i]) for i in top]

    def _refresh(self) -> None:
        """Take in the vectors stored since the last search (by any writer)."""
        assert self.embedder is not None
        after = int(self._ids[-1]) if len(self._ids) else 0
        rows = self.store.vectors(self.embedder.model, after)
        if rows:
            new = from_blobs([b for _, b in rows])
            self._matrix = new if not len(self._ids) else np.vstack([self._matrix, new])
            self._ids = np.concatenate([self._ids, np.array([i for i, _ in rows], dtype=np.int64)])
