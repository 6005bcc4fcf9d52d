"""Priors for the recipe brain from other runs on similar tasks: what each improve move did
(gain against its parent, run-time ratio) and how each recipe family ranked among the
families a run tried. Every run counts by its similarity to this task, 1 / (1 + distance),
and a run's many tries of one move on another task count little more than one (see
``move_priors``).

Both are in units of a run's own score spread, so the same rule serves AUC and RMSE, and
neither reads anything but the holdout scores and run times that the records keep.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

from ..metrics import get_metric
from .experience import CUT_SHORT, FAILED, Experience, TaskTraits

FAILED_GAIN = -0.5  # a move or family whose node failed: worse than no change, in score spreads


@dataclass(frozen=True)
class MovePrior:
    """What a recipe move (or family) did on similar tasks: a similarity-weighted count of
    tries, the mean gain in score spreads and the mean log run-time ratio."""

    weight: float
    gain: float
    log_cost: float


def move_priors(records: list[Experience], traits: TaskTraits, max_distance: float) -> dict[str, MovePrior]:
    """Per recipe move, its improve nodes' gains over their parents on similar tasks.

    The n tries of a move in one run at distance d count as n / (1 + d·n) observations of
    this task: on the same task (d = 0) each try counts fully, but on another task many tries
    tell that task's gain well and this task's no better than 1 / d (the two tasks' gains
    differ however often the move was tried there). One busy run on a similar task thus
    cannot pass for several runs' agreement."""
    found: dict[tuple[str, str], list[tuple[float, float, float | None]]] = defaultdict(list)
    for exp in records:
        distance = exp.traits.distance(traits)
        if exp.op != "improve" or not exp.move or distance > max_distance:
            continue
        gain = FAILED_GAIN if exp.outcome == FAILED else exp.gain_spreads
        if gain is None:
            continue
        names = exp.move.split("+")
        cost = math.log(max(exp.cost_ratio, 1e-3)) / len(names) if exp.cost_ratio else None
        for name in names:  # a pair's result is credited to each of its moves, split evenly
            found[name, exp.run].append((distance, gain / len(names), cost))
    rows: dict[str, list[tuple[float, float, float | None]]] = defaultdict(list)
    for (name, _), tries in sorted(found.items()):  # sorted: sums replay exactly
        rows[name] += [(1.0 / (1.0 + d * len(tries)), gain, cost) for d, gain, cost in tries]
    return {name: _weighted(tries) for name, tries in rows.items()}


def family_priors(records: list[Experience], traits: TaskTraits, max_distance: float) -> dict[str, MovePrior]:
    """Per recipe family, how its best node ranked against the other families of the same
    run: (its best score - the mean of the families' bests) / their spread, in the better
    direction; a family whose every node failed ranks below the run's worst scored family by
    ``FAILED_GAIN``'s half spread (it cost time and gave nothing). Its cost is its
    median run time over the run's median. A run that scored fewer than two families says
    nothing about their order and is left out."""
    by_run: dict[str, list[Experience]] = defaultdict(list)
    for exp in records:
        if exp.recipe and exp.outcome != CUT_SHORT and exp.traits.distance(traits) <= max_distance:
            by_run[exp.run].append(exp)
    rows: dict[str, list[tuple[float, float, float | None]]] = defaultdict(list)
    for run_records in by_run.values():
        sign = 1.0 if get_metric(run_records[0].traits.metric).direction == "maximize" else -1.0
        best: dict[str, float] = {}
        times: dict[str, list[float]] = defaultdict(list)
        for exp in run_records:
            if exp.score is not None:
                best[exp.recipe] = max(best.get(exp.recipe, -math.inf), sign * exp.score)
            if exp.exec_s:
                times[exp.recipe].append(exp.exec_s)
        spread = statistics.pstdev(best.values()) if len(best) >= 2 else 0.0
        if not spread:
            continue
        mean = statistics.fmean(best.values())
        failed = (min(best.values()) - mean) / spread + FAILED_GAIN
        all_times = [t for ts in times.values() for t in ts]
        typical = statistics.median(all_times) if all_times else None
        weight = 1.0 / (1.0 + run_records[0].traits.distance(traits))
        for family in sorted({exp.recipe for exp in run_records}):  # sorted: sums replay exactly
            gain = (best[family] - mean) / spread if family in best else failed
            cost = math.log(statistics.median(times[family]) / typical) if times[family] and typical else None
            rows[family].append((weight, gain, cost))
    return {name: _weighted(found) for name, found in rows.items()}


def _weighted(rows: list[tuple[float, float, float | None]]) -> MovePrior:
    weight = sum(w for w, _, _ in rows)
    costs = [(w, c) for w, _, c in rows if c is not None]
    cost_weight = sum(w for w, _ in costs)
    return MovePrior(
        weight=round(weight, 6),
        gain=sum(w * g for w, g, _ in rows) / weight,
        log_cost=sum(w * c for w, c in costs) / cost_weight if cost_weight else 0.0,
    )
