"""Greedy tree search: a few drafts, then improve the best; repair broken leaves (capped per
lineage); a fresh draft every few iterations so the search does not collapse onto one lineage;
and a blend of the best node of each branch whenever that member set is new (search.blend)."""

from __future__ import annotations

import random

from ..config import BudgetConfig, SearchConfig
from ..core.graph import SearchGraph
from ..core.protocols import Action
from ..core.vocabulary import DEBUGGABLE, Op
from .blend import blend_action
from .evidence import evidence_action


class GreedyPolicy:
    def __init__(self, cfg: SearchConfig, budget: BudgetConfig | None = None):
        self.cfg = cfg  # the budget does not change what greedy does

    def select(self, graph: SearchGraph, iteration: int) -> Action:
        # Seeded per iteration, so a resumed run makes the same choice it would have made.
        rng = random.Random(self.cfg.seed * 1_000_003 + iteration)
        n_drafts = len(graph.drafts())
        if n_drafts < self.cfg.num_drafts:
            return Action(Op.DRAFT, (), f"draft {n_drafts + 1} of {self.cfg.num_drafts}")

        rerun = evidence_action(graph, self.cfg)  # a near-tie candidate gets its re-runs before anything else
        if rerun is not None:
            return rerun
        debuggable = [
            n for n in graph.failed_leaves() if n.status in DEBUGGABLE and n.debug_depth < self.cfg.max_debug_depth
        ]
        best = graph.best()
        if debuggable and (best is None or rng.random() < self.cfg.debug_probability):
            broken = max(debuggable, key=lambda n: n.iteration)  # freshest failure first
            return Action(Op.DEBUG, (broken.id,), f"repair {broken.id} ({broken.status})")

        blend = blend_action(graph, self.cfg)
        if blend is not None:
            return blend
        if self.cfg.draft_every and iteration % self.cfg.draft_every == 0:
            return Action(Op.DRAFT, (), f"periodic fresh draft (every {self.cfg.draft_every})")
        # A blend is not improved directly: better members make a better next blend.
        target = graph.best(exclude_blends=True)
        if target is None:
            return Action(Op.DRAFT, (), "nothing scored yet")
        return Action(Op.IMPROVE, (target.id,), f"improve the best node {target.id}")
