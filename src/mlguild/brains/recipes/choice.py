"""Choosing an improve move by its expected gain per second on this task.

Every improve node the recipe brain made is a small experiment: a move applied to a parent,
with a score change and a run-time change. A move's expected gain is the mean of its
observed gains (in units of the spread of scores on this task, so the same rule serves AUC
and RMSE), shrunk toward zero with one pseudo-observation, plus an exploration bonus that
shrinks as the move is tried. Its expected cost is the geometric mean of its observed
run-time ratios (child over parent), starting from 1. A pair of moves adds gains and
multiplies costs. Until anything is observed every move ties, and the seeded draw decides.

What a move did on similar tasks in earlier runs (the memory's move priors) starts its
estimate instead of zero: the prior counts as up to ``_PRIOR_CAP`` observations (its gain
and its run time apart, each as far as the store shows such results carry over between
tasks), so what this task shows soon outweighs it. The same memory orders the first
drafts: a recipe family that ranked above the others on similar tasks is drafted before the
catalogue's order would, once the evidence is worth at least one run on the same task.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ...core.protocols import Context, HistoryItem
from ...core.vocabulary import Op
from ...memory import FAILED_GAIN, MovePrior

T = TypeVar("T")

_EXPLORE = 0.5  # bonus for an untried move, in units of the task's score spread
_TOO_SLOW = 0.9  # an option expected to need more than this share of the time limit is last
_PRIOR_CAP = 3.0  # most observations a prior from other tasks counts as
# Least evidence (in runs: one on the same task counts 1, one at distance d counts 1/(1+d),
# times the store's measured transfer of family ranks) for the family priors to reorder the
# drafts. Reordering decides which families a run tries at all, and one run on a merely
# similar task misled it as often as it helped (issue 11's warm benchmark), so it waits for
# a same-task run or several similar ones.
_FAMILY_EVIDENCE = 1.0


@dataclass(frozen=True)
class MoveStats:
    tries: int  # observations on this task
    gain: float  # shrunk mean gain, in score-spread units (positive = better)
    cost: float  # expected run-time ratio to the parent
    prior: float = 0.0  # how many observations the gain prior from similar tasks counts as
    cost_prior: float = 0.0  # how many its run-time prior counts as

    def value(self) -> float:
        """Gain per unit of cost, optimistic by the exploration bonus."""
        hopeful = self.gain + _EXPLORE / math.sqrt(self.tries + self.prior + 1)
        return hopeful / self.cost if hopeful > 0 else hopeful * self.cost


def move_stats(
    history: tuple[HistoryItem, ...], direction: str, priors: Mapping[str, MovePrior] | None = None
) -> dict[str, MoveStats]:
    """Per single move name, what its improve nodes on this task have shown so far, starting
    from what it did on similar tasks (``priors``)."""
    by_id = {h.node_id: h for h in history}
    scores = [h.score for h in history if h.score is not None]
    spread = statistics.pstdev(scores) if len(scores) >= 2 else 0.0
    spread = spread or max(1e-9, abs(scores[0]) * 0.01 if scores else 1.0)
    sign = 1.0 if direction == "maximize" else -1.0
    gains: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for h in history:
        parent, move = by_id.get(h.meta.get("parent") or ""), h.meta.get("move")
        if h.op != Op.IMPROVE or h.cut_short or parent is None or parent.score is None or not move:
            continue  # a node the run's end cut short says nothing about its move
        names = move.split("+")
        gain = FAILED_GAIN if h.score is None else sign * (h.score - parent.score) / spread
        ratio = h.exec_s / parent.exec_s if h.exec_s and parent.exec_s else None
        for name in names:  # a pair's result is credited to each of its moves, split evenly
            gains.setdefault(name, []).append(gain / len(names))
            if ratio is not None:
                ratios.setdefault(name, []).append(ratio ** (1 / len(names)))
    priors = priors or {}
    stats = {}
    for name in {*gains, *priors}:
        observed = gains.get(name, [])
        logs = [math.log(max(r, 1e-3)) for r in ratios.get(name, [])]
        prior = priors.get(name)
        w = min(prior.weight, _PRIOR_CAP) if prior is not None else 0.0
        wc = min(prior.cost_weight, _PRIOR_CAP) if prior is not None else 0.0
        g0, c0 = (prior.gain, prior.log_cost) if prior is not None else (0.0, 0.0)
        stats[name] = MoveStats(
            len(observed),
            (sum(observed) + w * g0) / (len(observed) + 1 + w),
            math.exp((sum(logs) + wc * c0) / (len(logs) + 1 + wc)),
            w,
            wc,
        )
    return stats


Option = tuple[tuple[Any, ...], T]  # (the moves, the meta they give)


def choose(
    options: list[Option[T]],
    parent_id: str,
    context: Context,
    rng: random.Random,
    idea_priors: Mapping[str, MovePrior] | None = None,
) -> tuple[Option[T], str]:
    """The option (moves, meta) with the best expected gain per second, and a line saying why.
    ``idea_priors``: priors from the community's ideas, for moves the memory has none for."""
    stats = move_stats(context.history, context.direction, {**(idea_priors or {}), **context.move_priors})
    parent = next((h for h in context.history if h.node_id == parent_id), None)
    parent_s = parent.exec_s if parent is not None else None

    def combined(option) -> MoveStats:
        parts = [stats.get(m.name, MoveStats(0, 0.0, 1.0)) for m in option[0]]
        return MoveStats(
            min(p.tries for p in parts),
            sum(p.gain for p in parts),
            math.prod(p.cost for p in parts),
            min(p.prior for p in parts),
            min(p.cost_prior for p in parts),
        )

    def key(option) -> tuple[bool, float]:
        s = combined(option)
        fits = not parent_s or parent_s * s.cost <= _TOO_SLOW * context.script_timeout_s
        return fits, round(s.value(), 9)

    best_key = max(key(o) for o in options)
    chosen = rng.choice([o for o in options if key(o) == best_key])
    s = combined(chosen)
    if s.tries == 0 and s.prior == 0 and s.cost_prior == 0:
        why = "not tried on this task yet, so its gain per second is unknown and worth learning"
    else:
        evidence = [f"{s.tries} earlier tr{'y' if s.tries == 1 else 'ies'} here"] if s.tries else []
        remembered = any(m.name in context.move_priors for m in chosen[0])
        if s.prior and not remembered:
            evidence.append("a community idea that names it")
        elif s.prior:
            evidence.append("what it did on similar tasks in earlier runs")
        elif s.cost_prior:
            evidence.append("its run time on similar tasks in earlier runs")
        why = (
            f"best expected gain per second: {s.gain:+.2f} score spreads at ×{s.cost:.2f} "
            f"the parent's run time, from {' and '.join(evidence)}"
        )
    return chosen, why


def family_order(names: list[str], priors: Mapping[str, MovePrior]) -> list[str]:
    """``names`` (in catalogue order) reordered by how each family ranked among the families
    of similar tasks, shrunk like a move's prior; a family never seen there, or seen with less
    than ``_FAMILY_EVIDENCE``, counts as average."""

    def value(name: str) -> float:
        prior = priors.get(name)
        if prior is None or prior.weight < _FAMILY_EVIDENCE:
            return 0.0
        w = min(prior.weight, _PRIOR_CAP)
        return w * prior.gain / (w + 1)

    return sorted(names, key=lambda n: (-round(value(n), 9), names.index(n)))


def family_reason(name: str, priors: Mapping[str, MovePrior]) -> str:
    """Why ``name`` comes where it does, from the family priors ('' when they do not count)."""
    prior = priors.get(name)
    if prior is None or prior.weight < _FAMILY_EVIDENCE:
        return ""
    return (
        f"on similar tasks in earlier runs its best node scored {prior.gain:+.2f} score spreads against "
        f"the mean of the families tried there, at ×{math.exp(prior.log_cost):.2f} the typical run time "
        f"(evidence worth {prior.weight:.1f} runs)"
    )
