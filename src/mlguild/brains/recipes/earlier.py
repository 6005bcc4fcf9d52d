"""A second run on a task starts where the earlier runs on it ended.

The memory keeps each recipe node's settings (``memory.Experience.config``); for a task that
earlier runs have worked on (the same data, ``task/identity``, and traits), it lists the configurations behind
their best nodes, best first: the best node's own, or, when that was a blend, each of its
recipe members' (``memory.priors.earlier_bests``). Before anything else, the recipe brain
drafts each of them again as it was (same recipe, parameters, features and run settings, so
the same script), leaving out one this run has made already, one the catalogue cannot offer
here and one whose earlier run time would not fit this run's time limit. The search then
improves from there with the moves' same-task priors, and the policy's blends find the
members again. An earlier best that was a reference model (``run/references``) is made first
and counts as its rung of this run's baseline ladder, which runs the other rungs after it.
Other tasks' bests are never drafted this way: what is best on another task
enters only through the priors, weighted by the transfer the store measures.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from ...core.protocols import Context
from ...memory import EarlierBest
from .catalog import RECIPES, recipes_for
from .choice import _TOO_SLOW
from .draft import draft_meta
from .recipe import RecipeMeta


def settings_key(meta: Mapping[str, Any]) -> str:
    """What a recipe script's behaviour depends on: equal keys render equal scripts."""
    return json.dumps([meta.get(k) for k in ("recipe", "params", "features", "run")], sort_keys=True, default=str)


def next_earlier_best(context: Context) -> EarlierBest | None:
    """The first earlier best this run has not made yet and can make now, or None."""
    made = {settings_key(h.meta) for h in context.history}
    offered = set(recipes_for(context.task, context.profile))
    for found in context.earlier_bests:
        name = found.config.get("recipe")
        if name not in offered or settings_key(found.config) in made:
            continue
        if found.exec_s and found.exec_s > _TOO_SLOW * context.script_timeout_s:
            continue  # an earlier, longer run could afford it; this one cannot
        return found
    return None


def earlier_best_meta(found: EarlierBest, context: Context) -> RecipeMeta:
    """The draft meta that makes ``found`` again: its settings over the recipe's keys."""
    config = found.config
    meta = draft_meta(str(config["recipe"]), context.task, context.profile)
    meta["params"] = copy.deepcopy(config["params"])
    meta["features"] = copy.deepcopy(config["features"])
    meta["run"] = copy.deepcopy(config["run"])
    meta["moves"] = list(config.get("moves") or [])
    meta["recalled"] = f"{found.run}/{found.node}"
    if found.config.get("reference"):  # a reference model's script: it stands for its rung here too
        meta["reference"] = str(found.config["reference"])
    return meta


def earlier_best_lines(found: EarlierBest, context: Context) -> list[str]:
    """The plan of a draft that makes ``found`` again."""
    recipe = RECIPES[str(found.config["recipe"])]
    moves = [str(m) for m in found.config.get("moves") or [] if m]
    how = f"its default settings changed by {' → '.join(f'`{m}`' for m in moves)}" if moves else "default settings"
    role = (
        f"made that run's best holdout score, {found.score:.5g} ({context.task['metric']})"
        if found.node == found.best
        else f"is a member of the blend `{found.best}` that made that run's best holdout score, "
        f"{found.score:.5g} ({context.task['metric']})"
    )
    return [
        f"## Draft: an earlier run's best on this task ({recipe.title})",
        "",
        f"**What:** node `{found.node}` of run `{found.run}` made again as it was: {recipe.title}, {how}. It {role}.",
        "**Why:** earlier runs on this very task count in full, so this run starts where that one ended and "
        "explores from there, instead of finding it again (what it scored in earlier runs).",
    ]
