"""Which settings a new recipe node may take: the untried single moves (or pairs) on a meta,
leaving out settings some node has run already, and whether a node was drafted from a
family's defaults."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from ...core.protocols import Context
from .earlier import settings_key
from .moves import Facts, Move, applicable
from .recipe import Recipe, RecipeMeta


def variants(
    meta: RecipeMeta, recipe: Recipe, context: Context, tried: set[str]
) -> list[tuple[tuple[Move, ...], RecipeMeta]]:
    """(moves, resulting meta) for each untried single move on ``meta`` — or each pair, once
    the singles are used up — leaving out results that some earlier node already ran (a
    weaker penalty after a stronger one would just repeat the grandparent)."""
    facts = Facts.of(context.task, context.profile)
    seen = {settings_key(h.meta) for h in context.history} | {settings_key(meta)}
    moves = applicable(meta, recipe, facts)
    for size in (1, 2):
        options = []
        for combo in itertools.combinations(moves, size):
            if "+".join(m.name for m in combo) in tried:
                continue
            trial = copy.deepcopy(meta)
            for move in combo:
                move.apply(trial, recipe, facts)
            if settings_key(trial) not in seen:
                options.append((combo, trial))
        if options:
            return options
    return []


def drafted(meta: Mapping[str, Any]) -> bool:
    """Whether a recipe node was drafted from a family's defaults (varied or not), whatever the
    action that asked for it."""
    return (
        meta.get("brain") == "recipes" and bool(meta.get("recipe")) and not meta.get("parent") and not meta.get("fuse")
    )
