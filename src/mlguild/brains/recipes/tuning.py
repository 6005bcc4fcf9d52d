"""Tuning: a search over a boosted-tree recipe's main parameters that goes on as long as the run.

The single moves (moves.py) each turn one knob by a fixed factor; once they and their pairs
are used up on a parent, the brain could only draft again. A ``tune`` probe changes every
tunable parameter at once along a random direction (a randomised direct search, like FLAML's
CFO), in coordinates where each parameter's range is [0, 1] (on a log scale for rates, sizes
and penalties):

- a probe that did not beat its parent is followed by its mirror, the opposite direction from
  the same parent (``MAX_PROBES`` probes per parent at most, in mirrored pairs);
- the step shrinks with each probe of the family on this task that did not beat its parent,
  and grows back when one does, so a long run refines around its best configuration instead
  of repeating the same coarse moves;
- the family's first probe on a task heads for what the memory holds: the configurations
  that family's best nodes had in other runs on similar tasks (``Context.family_configs``,
  each run weighted by its similarity), when they differ from the parent's. What they score
  here is measured like any other probe's: the memory decides where to look, never a score.

Rows: a probe is an improve, so on a table large enough for row samples it trains on its
parent's sample, and the best of each sample size runs again on more rows (run/samples.py:
successive halving on rows); the final refit trains the chosen one on every row.
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass
from typing import Any

from ...core.protocols import Context, HistoryItem
from ...core.vocabulary import Op, Status
from .recipe import Recipe, RecipeMeta, recipe_meta

TUNE = "tune"  # the move's name, as the node's meta, the move statistics and the memory know it
MAX_PROBES = 4  # tune probes from one parent: two directions and their mirrors
STEP = 0.3  # the first probe's length, in the normalised coordinates
SHRINK = 0.8  # the step's factor per probe that did not beat its parent
MIN_STEP = 0.05
MAX_ROUNDS = 20_000
_SAME = 0.05  # a remembered configuration nearer than this to the parent's is not worth a probe


@dataclass(frozen=True)
class Dim:
    """One tunable parameter: its range, and whether it is searched on a log scale."""

    low: float
    high: float
    log: bool = False
    integer: bool = False

    def to_unit(self, value: float) -> float:
        value = min(max(float(value), self.low), self.high)
        if self.log:
            return math.log(value / self.low) / math.log(self.high / self.low)
        return (value - self.low) / (self.high - self.low)

    def from_unit(self, unit: float) -> float | int:
        unit = min(max(unit, 0.0), 1.0)
        value = self.low * (self.high / self.low) ** unit if self.log else self.low + unit * (self.high - self.low)
        return int(round(value)) if self.integer else float(f"{value:.4g}")


# The parameters a probe searches, by the name the recipes pass to the model (LightGBM's,
# XGBoost's, CatBoost's and scikit-learn's HistGradientBoosting's); the ranges hold the
# values that tuned boosted trees take on tabular benchmarks. The number of rounds is not
# searched (early stopping picks it); it grows when the learning rate falls (``probe``).
DIMS: dict[str, Dim] = {
    "learning_rate": Dim(0.005, 0.3, log=True),
    "num_leaves": Dim(7, 255, log=True, integer=True),
    "max_leaf_nodes": Dim(7, 255, log=True, integer=True),
    "max_depth": Dim(3, 12, integer=True),
    "depth": Dim(4, 10, integer=True),  # CatBoost's symmetric trees double per level
    "min_child_samples": Dim(2, 200, log=True, integer=True),
    "min_samples_leaf": Dim(2, 200, log=True, integer=True),
    "min_child_weight": Dim(0.1, 30.0, log=True),
    "reg_lambda": Dim(0.01, 100.0, log=True),
    "l2_leaf_reg": Dim(0.5, 50.0, log=True),
    "l2_regularization": Dim(0.01, 100.0, log=True),
    "colsample_bytree": Dim(0.3, 1.0),
    "subsample": Dim(0.5, 1.0),
}
_LEAST_DIMS = 3  # a recipe with fewer tunable parameters is left to the single moves


@dataclass(frozen=True)
class Probe:
    """The tune move, as the brain's options name their moves."""

    name: str = TUNE
    why: str = (
        "a random direction through every main parameter at once (rate, tree size, leaf size, penalty, "
        "sampling), with a step that shrinks as probes stop gaining: a search that keeps refining "
        "the best configuration where single moves are used up"
    )


def tunable(meta: RecipeMeta, recipe: Recipe) -> list[str]:
    """The parameters of ``meta`` a probe searches (empty: the recipe is not tuned): a
    boosted recipe's (it has a learning rate and a number of rounds) with enough of them."""
    if "lr" not in recipe.knobs or "rounds" not in recipe.knobs:
        return []
    names = sorted(name for name in meta["params"] if name in DIMS and isinstance(meta["params"][name], int | float))
    return names if len(names) >= _LEAST_DIMS else []


def probe(
    meta: RecipeMeta, recipe: Recipe, parent_id: str, parent_score: float | None, context: Context, rng: random.Random
) -> RecipeMeta | None:
    """The next tune probe from ``meta`` (the parent's, which scored ``parent_score``), or
    None when the recipe is not tuned or the parent's probes are used up. The result's
    ``tune`` key records the direction (per parameter, in unit coordinates), the step, where
    the direction came from (``random``, ``mirror`` or ``memory``) and the parent's score (what
    the probe must beat)."""
    names = tunable(meta, recipe)
    if not names:
        return None
    siblings = [h for h in context.history if _is_probe(h) and h.meta.get("parent") == parent_id]
    if len(siblings) >= MAX_PROBES:
        return None
    here = {n: DIMS[n].to_unit(meta["params"][n]) for n in names}
    direction, source = _direction(names, here, siblings, recipe.name, context, rng)
    if source == "mirror":  # the same length back
        step = float(_probe_of(siblings[-1]).get("step") or STEP)
    elif source == "memory":  # all the way to the remembered configuration
        step = math.sqrt(sum(v * v for v in direction.values()))
        direction = {n: v / step for n, v in direction.items()}
    else:
        step = _step(context.history, recipe.name, context.direction)
    trial = copy.deepcopy(meta)
    for name in names:
        trial["params"][name] = DIMS[name].from_unit(here[name] + step * direction[name])
    _keep_rounds(meta, trial, recipe)
    trial["tune"] = {
        "direction": {n: round(v, 6) for n, v in direction.items()},
        "step": round(step, 6),
        "source": source,
        "parent_score": parent_score,
    }
    return trial


def describe(tuned: RecipeMeta) -> str:
    """One line on where a probe heads, for its plan."""
    record = tuned.get("tune") or {}
    where = {
        "random": "a random direction",
        "mirror": "the mirror of the parent's last probe, which did not beat it",
        "memory": "toward the parameters this family's best nodes had on similar tasks in earlier runs",
    }.get(str(record.get("source")), "a random direction")
    return f"{where}, step {float(record.get('step') or 0.0):.3g} (a parameter's whole range is 1)"


def _direction(
    names: list[str],
    here: dict[str, float],
    siblings: list[HistoryItem],
    family: str,
    context: Context,
    rng: random.Random,
) -> tuple[dict[str, float], str]:
    """Where the next probe heads from the parent: back along the last probe's direction when
    it has no mirror yet and did not beat the parent; for the family's first probe on the
    task, toward the memory's configurations (not normalised: the step is their distance);
    else a random unit direction."""
    if len(siblings) % 2 == 1:
        last = siblings[-1]
        old = _probe_of(last).get("direction") or {}
        if not _beat(last, context.direction) and set(old) == set(names):
            return {n: -float(old[n]) for n in names}, "mirror"
    tried_here = any(_is_probe(h) and h.meta.get("recipe") == family for h in context.history)
    remembered = _remembered(names, context.family_configs.get(family, ()))
    if not tried_here and remembered is not None:
        toward = {n: remembered[n] - here[n] for n in names}
        if math.sqrt(sum(v * v for v in toward.values())) > _SAME:
            return toward, "memory"
    raw = {n: rng.gauss(0.0, 1.0) for n in names}
    norm = math.sqrt(sum(v * v for v in raw.values())) or 1.0
    return {n: v / norm for n, v in raw.items()}, "random"


def _remembered(names: list[str], configs: tuple[tuple[float, dict[str, Any]], ...]) -> dict[str, float] | None:
    """The similarity-weighted mean, in unit coordinates, of the remembered configurations'
    values of ``names`` (a parameter a configuration lacks keeps the others' mean); None when
    the memory holds none with every parameter's value somewhere."""
    sums = dict.fromkeys(names, 0.0)
    weights = dict.fromkeys(names, 0.0)
    for weight, params in configs:
        for name in names:
            value = params.get(name)
            if isinstance(value, int | float) and weight > 0:
                sums[name] += weight * DIMS[name].to_unit(value)
                weights[name] += weight
    if not all(weights.values()):
        return None
    return {n: sums[n] / weights[n] for n in names}


def _step(history: tuple[HistoryItem, ...], family: str, direction: str) -> float:
    """The probe length: ``STEP``, times ``SHRINK`` for each of this family's finished probes
    that did not beat its parent, divided by it for each that did (in the order they ran),
    kept within [``MIN_STEP``, ``STEP``]."""
    step = STEP
    for h in history:
        if not _is_probe(h) or h.meta.get("recipe") != family or h.status == Status.PENDING or h.cut_short:
            continue  # a probe the run's end cut short says nothing about the step
        step = step / SHRINK if _beat(h, direction) else step * SHRINK
        step = min(max(step, MIN_STEP), STEP)
    return step


def _is_probe(item: HistoryItem) -> bool:
    """A tune probe's node (a grow of one runs its script again with its meta: not a probe)."""
    return item.op == Op.IMPROVE and item.meta.get("move") == TUNE


def _probe_of(item: HistoryItem) -> dict[str, Any]:
    """What a tune node recorded of its probe (direction, step, source)."""
    return recipe_meta(item.meta).get("tune") or {}


def _beat(child: HistoryItem, direction: str) -> bool:
    """Whether the probe ``child`` scored better than the parent it started from."""
    before = _probe_of(child).get("parent_score")
    if child.score is None or before is None:
        return False
    return child.score > before if direction == "maximize" else child.score < before


def _keep_rounds(old: RecipeMeta, new: RecipeMeta, recipe: Recipe) -> None:
    """A smaller learning rate needs proportionally more rounds for the same fit (early
    stopping still picks the count); a larger one keeps the parent's allowance."""
    lr, rounds = recipe.knobs["lr"], recipe.knobs["rounds"]
    before, after = float(old["params"][lr]), float(new["params"][lr])
    if rounds in new["params"] and 0 < after < before:
        new["params"][rounds] = min(MAX_ROUNDS, int(math.ceil(old["params"][rounds] * before / after)))
