"""Priors for the recipe brain from other runs on similar tasks: what each improve move did
(gain against its parent, run-time ratio) and how each recipe family ranked among the
families a run tried. Every run counts by its similarity to this task, 1 / (1 + distance),
and a run's many tries of one move on another task count little more than one (see
``move_priors``).

What happened on another task counts only as far as the store shows that tasks predict
each other (``measure_transfer``): on the tasks it holds, how well the other tasks' results
foretold each task's own, for gains, run times and family ranks apart. Run times carry over
from task to task far better than gains do, and a store of unrelated tasks then steers a
run by their run times and leaves its gains to this task's own evidence. Records of this
very task (earlier runs on it) always count in full.

Both are in units of a run's own score spread, so the same rule serves AUC and RMSE, and
neither reads anything but the holdout scores and run times that the records keep.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from ..core.recall import EarlierBest, MovePrior
from ..core.vocabulary import Op
from ..metrics import get_metric
from .experience import CUT_SHORT, FAILED, Experience, TaskTraits

FAILED_GAIN = -0.5  # a move or family whose node failed: worse than no change, in score spreads


# Fewest (task, move) pairs on which the store's transfer is measured; below it (a store
# of one or two other tasks) the defaults below hold.
_MIN_TRANSFER_PAIRS = 10
# Unmeasured transfer: another task's gains and family ranks count for nothing, its run
# times for half. Measured on 18 gauntlet data sets and the five examples (issue 11,
# `benchmarks/search.py transfer`), gain slopes were 0 to 0.16 and run-time slopes 0.44 to 0.67.
DEFAULT_GAIN_TRUST = 0.0
DEFAULT_COST_TRUST = 0.5
DEFAULT_FAMILY_TRUST = 0.0


@dataclass(frozen=True)
class Transfer:
    """How far one task's results foretell another's in a store: per kind of result, the
    slope (through 0, less its standard error, clipped to [0, 1]) of each task's own means on
    the similarity-weighted means of the other tasks within reach, over ``pairs`` (task, move)
    pairs."""

    gain: float = DEFAULT_GAIN_TRUST
    cost: float = DEFAULT_COST_TRUST
    family: float = DEFAULT_FAMILY_TRUST
    pairs: int = 0


def measure_transfer(records: list[Experience], task: str, max_distance: float) -> Transfer:
    """``Transfer`` measured on ``records`` of tasks other than ``task``, leaving one task
    out at a time: a slope of 1 means the other tasks' mean foretold each task's in full, 0
    that it foretold nothing. A kind with fewer than ``_MIN_TRANSFER_PAIRS`` pairs keeps its
    default."""
    others = [exp for exp in records if exp.task != task]
    gains: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    costs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    traits: dict[str, TaskTraits] = {}
    for exp in others:
        label = _task_label(exp)
        traits.setdefault(label, exp.traits)
        for name, gain, cost in _move_results(exp):
            gains[label][name].append(gain)
            if cost is not None:
                costs[label][name].append(cost)
    families: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run_records in _by_run([exp for exp in others if exp.recipe and exp.outcome != CUT_SHORT]).values():
        for family, (gain, _) in _family_ranks(run_records).items():
            families[_task_label(run_records[0])][family].append(gain)
    gain, gain_pairs = _slope(gains, traits, max_distance)
    cost, cost_pairs = _slope(costs, traits, max_distance)
    rank, rank_pairs = _slope(families, traits, max_distance)
    return Transfer(
        gain=gain if gain_pairs >= _MIN_TRANSFER_PAIRS else DEFAULT_GAIN_TRUST,
        cost=cost if cost_pairs >= _MIN_TRANSFER_PAIRS else DEFAULT_COST_TRUST,
        family=rank if rank_pairs >= _MIN_TRANSFER_PAIRS else DEFAULT_FAMILY_TRUST,
        pairs=gain_pairs,
    )


def transfer_by_type(records: list[Experience], max_distance: float) -> dict[str, tuple[int, int, Transfer]]:
    """Per task type in ``records``: (tasks, records, the transfer among those tasks)."""
    found = {}
    for task_type in sorted({exp.traits.task_type for exp in records}):
        mine = [exp for exp in records if exp.traits.task_type == task_type]
        tasks = len({_task_label(exp) for exp in mine})
        found[task_type] = (tasks, len(mine), measure_transfer(mine, "", max_distance))
    return found


def _task_label(exp: Experience) -> str:
    """One task: its name and traits (two tasks may share a name, not both)."""
    return f"{exp.task} {exp.traits}"


def _slope(
    per_task: dict[str, dict[str, list[float]]], traits: dict[str, TaskTraits], max_distance: float
) -> tuple[float, int]:
    """Least-squares slope through 0 of each task's per-key mean on the other tasks' (those
    within ``max_distance`` of it, weighted 1 / (1 + distance)), less one standard error and
    clipped to [0, 1]; and the number of (task, key) pairs. Through 0: the slope is the share
    of another task's result to expect here, and 0 (no change) is what a move or family is
    worth when nothing is known. Less its standard error: a store of a few tasks measures the
    slope roughly (one task more or less moved it from 0.1 to 0.35 on six), and trusting other
    tasks too far costs a run more than trusting them too little."""
    found_pairs: list[tuple[float, float]] = []
    tasks = sorted(per_task)
    for task in tasks:
        distances = {other: traits[task].distance(traits[other]) for other in tasks if other != task}
        near = [(1.0 / (1.0 + d), other) for other, d in distances.items() if d <= max_distance]
        for key, values in sorted(per_task[task].items()):
            found = [(w, statistics.fmean(per_task[other][key])) for w, other in near if per_task[other].get(key)]
            if found:
                predicted = sum(w * v for w, v in found) / sum(w for w, _ in found)
                found_pairs.append((predicted, statistics.fmean(values)))
    own = sum(p * p for p, _ in found_pairs)
    if not own or len(found_pairs) < 2:
        return 0.0, len(found_pairs)
    slope = sum(p * a for p, a in found_pairs) / own
    residual = sum((a - slope * p) ** 2 for p, a in found_pairs) / (len(found_pairs) - 1)
    return min(1.0, max(0.0, slope - math.sqrt(residual / own))), len(found_pairs)


def move_priors(
    records: list[Experience], traits: TaskTraits, max_distance: float, task: str = "", transfer: Transfer | None = None
) -> dict[str, MovePrior]:
    """Per recipe move, its improve nodes' gains over their parents on similar tasks.

    The n tries of a move in one run at distance d count as n / (1 + d·n) observations of
    this task: on the same task (d = 0) each try counts fully, but on another task many tries
    tell that task's gain well and this task's no better than 1 / d (the two tasks' gains
    differ however often the move was tried there). One busy run on a similar task thus
    cannot pass for several runs' agreement. A record of another task than ``task`` counts
    further by ``transfer`` (its gain by ``transfer.gain``, its run time by ``transfer.cost``;
    None: in full)."""
    found: dict[tuple[str, str], list[tuple[float, float, float | None, bool]]] = defaultdict(list)
    for exp in records:
        distance = exp.traits.distance(traits)
        if distance > max_distance:
            continue
        same = exp.task == task and distance == 0
        for name, gain, cost in _move_results(exp):
            found[name, exp.run].append((distance, gain, cost, same))
    rows: dict[str, list[tuple[float, float, float | None, float]]] = defaultdict(list)
    for (name, _), tries in sorted(found.items()):  # sorted: sums replay exactly
        for d, gain, cost, same in tries:
            weight = 1.0 / (1.0 + d * len(tries))
            trust = (1.0, 1.0) if same or transfer is None else (transfer.gain, transfer.cost)
            rows[name].append((weight * trust[0], gain, cost, weight * trust[1]))
    return {name: _weighted(tries) for name, tries in rows.items()}


def _move_results(exp: Experience) -> list[tuple[str, float, float | None]]:
    """(move, gain in score spreads, log run-time ratio) for each move of an improve record
    (a failure gains ``FAILED_GAIN``); none for another record, or one the run's end cut short.
    A pair's result is credited to each of its moves, split evenly."""
    if exp.op != Op.IMPROVE or not exp.move or exp.outcome == CUT_SHORT:
        return []
    gain = FAILED_GAIN if exp.outcome == FAILED else exp.gain_spreads
    if gain is None:
        return []
    names = exp.move.split("+")
    cost = math.log(max(exp.cost_ratio, 1e-3)) / len(names) if exp.cost_ratio else None
    return [(name, gain / len(names), cost) for name in names]


def family_priors(
    records: list[Experience], traits: TaskTraits, max_distance: float, task: str = "", transfer: Transfer | None = None
) -> dict[str, MovePrior]:
    """Per recipe family, how its best node ranked against the other families of the same
    run (see ``_family_ranks``); each run counts 1 / (1 + distance), a run on another task
    than ``task`` further by ``transfer.family`` (None: in full). Its cost is its median run
    time over the run's median."""
    ranked = [exp for exp in records if exp.recipe and exp.outcome != CUT_SHORT]
    rows: dict[str, list[tuple[float, float, float | None, float]]] = defaultdict(list)
    for run_records in _by_run([exp for exp in ranked if exp.traits.distance(traits) <= max_distance]).values():
        first = run_records[0]
        distance = first.traits.distance(traits)
        weight = 1.0 / (1.0 + distance)
        same = first.task == task and distance == 0
        trust = (1.0, 1.0) if same or transfer is None else (transfer.family, transfer.cost)
        for family, (gain, cost) in sorted(_family_ranks(run_records).items()):  # sorted: sums replay exactly
            rows[family].append((weight * trust[0], gain, cost, weight * trust[1]))
    return {name: _weighted(found) for name, found in rows.items()}


def family_configs(
    records: list[Experience], traits: TaskTraits, max_distance: float, per_family: int = 5
) -> dict[str, tuple[tuple[float, dict[str, Any]], ...]]:
    """Per recipe family, the model parameters of its best scored node in each other run on a
    task within ``max_distance`` (this very task's earlier runs included), each with the run's
    similarity, 1 / (1 + distance); the ``per_family`` most similar runs, nearest first. Where
    tuning a family starts (mlguild.brains.recipes.tuning): it only decides where the first
    probe looks, and the probe's own holdout score decides whether it stays, so a similarity
    weight suffices where a gain prior would need the store's measured transfer."""
    found: dict[str, list[tuple[float, str, dict[str, Any]]]] = defaultdict(list)
    for run, run_records in sorted(_by_run(records).items()):
        distance = run_records[0].traits.distance(traits)
        if distance > max_distance:
            continue
        try:
            sign = 1.0 if get_metric(run_records[0].traits.metric).direction == "maximize" else -1.0
        except ConfigError:  # a metric this version does not know
            continue
        best: dict[str, Experience] = {}
        for exp in run_records:
            params = (exp.config or {}).get("params")
            if exp.score is None or not exp.recipe or not isinstance(params, dict):
                continue
            if exp.recipe not in best or sign * exp.score > sign * (best[exp.recipe].score or 0.0):
                best[exp.recipe] = exp
        for family, exp in best.items():
            found[family].append((1.0 / (1.0 + distance), run, dict((exp.config or {})["params"])))
    return {
        family: tuple((w, params) for w, _, params in sorted(rows, key=lambda r: (-r[0], r[1]))[:per_family])
        for family, rows in found.items()
    }


def _by_run(records: list[Experience]) -> dict[str, list[Experience]]:
    by_run: dict[str, list[Experience]] = defaultdict(list)
    for exp in records:
        by_run[exp.run].append(exp)
    return by_run


def _family_ranks(run_records: list[Experience]) -> dict[str, tuple[float, float | None]]:
    """Per family of one run: (its best score - the mean of the families' bests) / their
    spread, in the better direction, and its log median run time over the run's median. A
    family whose every node failed ranks below the run's worst scored family by
    ``FAILED_GAIN``'s half spread (it cost time and gave nothing). A run that scored fewer
    than two families says nothing about their order: empty."""
    try:
        direction = get_metric(run_records[0].traits.metric).direction
    except ConfigError:  # a metric this version does not know (the store is shared across versions)
        return {}
    sign = 1.0 if direction == "maximize" else -1.0
    best: dict[str, float] = {}
    times: dict[str, list[float]] = defaultdict(list)
    for exp in run_records:
        if exp.score is not None:
            best[exp.recipe] = max(best.get(exp.recipe, -math.inf), sign * exp.score)
        if exp.exec_s:
            times[exp.recipe].append(exp.exec_s)
    spread = statistics.pstdev(best.values()) if len(best) >= 2 else 0.0
    if not spread:
        return {}
    mean = statistics.fmean(best.values())
    failed = (min(best.values()) - mean) / spread + FAILED_GAIN
    all_times = [t for ts in times.values() for t in ts]
    typical = statistics.median(all_times) if all_times else None
    ranks: dict[str, tuple[float, float | None]] = {}
    for family in {exp.recipe for exp in run_records}:
        gain = (best[family] - mean) / spread if family in best else failed
        cost = math.log(statistics.median(times[family]) / typical) if times[family] and typical else None
        ranks[family] = (gain, cost)
    return ranks


def _weighted(rows: list[tuple[float, float, float | None, float]]) -> MovePrior:
    """(gain weight, gain, log cost, cost weight) rows as one prior."""
    weight = sum(w for w, _, _, _ in rows)
    costs = [(wc, c) for _, _, c, wc in rows if c is not None]
    cost_weight = sum(wc for wc, _ in costs)
    return MovePrior(
        weight=round(weight, 6),
        gain=sum(w * g for w, g, _, _ in rows) / weight if weight else 0.0,
        log_cost=sum(wc * c for wc, c in costs) / cost_weight if cost_weight else 0.0,
        cost_weight=round(cost_weight, 6),
    )


def earlier_bests(records: list[Experience], task: str, traits: TaskTraits, runs: int = 3) -> list[EarlierBest]:
    """What a second run on this task should make first: for each of the ``runs`` best
    earlier runs of this very task (same data, ``task/identity``, and traits; another task's best says little
    here, see ``measure_transfer``), best run first, the configuration of its best node (the
    one its search chose, ``Experience.run_best``, evidence rules included), or
    of each recipe member of its best node when that is a blend (the best member first),
    leaving out a configuration already listed. Only holdout scores decide."""
    mine = [exp for exp in records if exp.task == task and exp.traits.distance(traits) == 0]
    try:
        sign = 1.0 if get_metric(traits.metric).direction == "maximize" else -1.0
    except ConfigError:  # a metric this version does not know
        return []
    by_run = _by_run(mine)
    bests = []
    for run_records in by_run.values():
        nodes = {e.node: e for e in run_records}
        newest = max(run_records, key=lambda e: _order(e.node))
        chosen = nodes.get(newest.run_best)  # the run's own best, as its search chose it
        if chosen is None:  # a record written before records named the run's best
            scored = [e for e in run_records if e.score is not None and e.config]
            chosen = max(scored, key=lambda e: (sign * (e.score or 0.0), -_order(e.node)), default=None)
        if chosen is not None and chosen.score is not None and chosen.config:
            bests.append(chosen)
    found: list[EarlierBest] = []
    seen: set[str] = set()
    for best in sorted(bests, key=lambda e: (-sign * (e.score or 0.0), e.run))[:runs]:
        nodes = {e.node: e for e in by_run[best.run]}
        config = best.config or {}
        members = [nodes[m] for m in config.get("fuse", []) if m in nodes] if "fuse" in config else [best]
        members.sort(key=lambda e: -sign * e.score if e.score is not None else math.inf)
        for member in members:
            made = member.config
            if not made or "fuse" in made or "recipe" not in made:
                continue
            key = json.dumps([made.get(k) for k in ("recipe", "params", "features", "run")], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            found.append(EarlierBest(made, best.run, member.node, best.node, float(best.score or 0.0), member.exec_s))
    return found


def _order(node: str) -> int:
    """A node id's number (n0012 -> 12): the earlier of two equal scores wins."""
    digits = "".join(ch for ch in node if ch.isdigit())
    return int(digits) if digits else 0


_PRIOR_MIN_WEIGHT = 0.5  # a prior worth less than half an observation is not stated to a model
_PRIORS_SHOWN = 3  # families and moves a prompt names, each way


def prior_lines(families: dict[str, MovePrior], moves: dict[str, MovePrior]) -> list[str]:
    """What the priors say, as a prompt's lines: the recipe families that ranked best (and
    worst) among the families of earlier runs on this and similar tasks, and the moves that
    gained (or lost) most over their parents; each with how many observations it counts as
    (similarity- and transfer-weighted, so an unrelated task's gains count for nothing)."""
    lines = []
    for kind, priors, what in (
        ("family", families, "against the mean of its run's families"),
        ("move", moves, "over its parent"),
    ):
        known = [(name, p) for name, p in sorted(priors.items()) if p.weight >= _PRIOR_MIN_WEIGHT and p.gain]
        best = sorted((x for x in known if x[1].gain > 0), key=lambda x: -x[1].gain)[:_PRIORS_SHOWN]
        worst = sorted((x for x in known if x[1].gain < 0), key=lambda x: x[1].gain)[:_PRIORS_SHOWN]
        for name, p in [*best, *worst]:
            time = f", ×{math.exp(p.log_cost):.2f} the run time" if p.cost_weight >= _PRIOR_MIN_WEIGHT else ""
            lines.append(f"{kind} {name}: {p.gain:+.2f} score spreads {what}{time} (worth {p.weight:.1f} observations)")
    return lines
