"""Greedy tree search: a few drafts, then improve the best; repair broken leaves (capped per
lineage); and a fresh draft every few iterations so the search does not collapse onto one lineage."""

from __future__ import annotations

import random

from ..config import SearchConfig
from ..protocols import Action
from .graph import DEBUGGABLE, SearchGraph


class GreedyPolicy:
    def __init__(self, cfg: SearchConfig):
        self.cfg = cfg

    def select(self, graph: SearchGraph, iteration: int) -> Action:
        # Seeded per iteration, so a resumed run makes the same choice it would have made.
        rng = random.Random(self.cfg.seed * 1_000_003 + iteration)
        n_drafts = len(graph.drafts())
        if n_drafts < self.cfg.num_drafts:
            return Action("draft", (), f"draft {n_drafts + 1} of {self.cfg.num_drafts}")

        debuggable = [
            n for n in graph.failed_leaves()
            if n.status in DEBUGGABLE and n.debug_depth < self.cfg.max_debug_depth
        ]
        best = graph.best()
        if debuggable and (best is None or rng.random() < self.cfg.debug_probability):
            target = max(debuggable, key=lambda n: n.iteration)   # freshest failure first
            return Action("debug", (target.id,), f"repair {target.id} ({target.status})")

        if self.cfg.draft_every and iteration % self.cfg.draft_every == 0:
            return Action("draft", (), f"periodic fresh draft (every {self.cfg.draft_every})")
        if best is None:
            return Action("draft", (), "nothing scored yet")
        return Action("improve", (best.id,), f"improve the best node {best.id}")
