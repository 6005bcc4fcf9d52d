"""The final stage's reserve: the time the search keeps back for what comes after it, as
this run measured it.

The final stage (mlguild.final.stage) scores its candidates once on the confirmation split,
refits one of them on every labelled row, and grades the final submission once. Each part
is priced from this run's own measurements, re-estimated whenever a node finishes:

- a refit: the candidate's own fit time (a blend: the members it used, every one for a stack,
  and its own), times the growth of the training file, times the scale of its model family
  (``RefitScales``: what refits of that family measured, refit seconds over search seconds per
  unit of growth, with a margin);
- the audit and the grade: the harness's measured seconds per node (scoring one file and
  writing its report), once per candidate, the constant baseline and the grade.

The candidates are the best node, the best blend (when within the promotion margin of the
best: the final stage takes it only within noise) and a blend the search is about to make
(unless its refit alone is over the cap below). The reserve is capped at
``final.max_refit_share`` of the budget: a refit that needs more is not waited for; the final
stage then refits the best node within noise of the base whose refit fits the time left
(``refittable``), or the base on as many labelled rows as fit, which is what the capped
reserve is sized for: the refit of the best node near the best (``near``) that fits the cap,
else the whole cap (on ten million rows, sizing it for the one node that fitted, a linear
model far behind, left the final stage 97 s and no refit).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Op, Status
from ..rundir.folder import RunDir
from .cost import family
from .refit import (
    DEFAULT_SCALE,
    ScaleOf,
    best_blend,
    expected_refit_seconds,
    growth,
    planned_blend_seconds,
    refit_seconds,
    unscaled_refit_seconds,
)

_DEFAULT_HARNESS_S = 1.0  # the harness's seconds per scoring before any node measured them
# Over the measured scales, for their spread from run to run. A machine whose load changes
# within a run moves them far more (churn's LightGBM refits ran 0.47 and 1.46 of linear in two
# runs at loads 7 and 11), which no margin covers: the final stage then keeps what it refitted.
_MARGIN = 1.1


def refit_family(node: Node, code: str) -> str:
    """The model family a refit's time is learned under: a blend's own rerun, else the
    family whose cost the search estimates (mlguild.run.cost.family), else "script"."""
    return "blend" if node.is_blend else family(node.meta, code) or "script"


def refit_scale(refit: Node, original: Node, grow: float) -> float | None:
    """What ``refit`` measured: its seconds over its node's in the search, per unit of growth
    of the training file (``grow``, or the share of it the refit trained on when time was short:
    its meta's ``refit_growth``); None when it says nothing (it failed or was cut, or either has
    no time)."""
    grow = float(refit.meta.get("refit_growth") or grow)
    refit_s, search_s = refit.timing.get("exec_s") or 0.0, original.timing.get("exec_s") or 0.0
    if refit.status != Status.FINAL_OK or refit_s <= 0 or search_s <= 0 or grow <= 0:
        return None
    return refit_s / unscaled_refit_seconds(original, grow, alone=bool(refit.meta.get("one_model")))


@dataclass
class RefitScales:
    """Per model family, the scale a refit takes (its seconds = scale x growth x the node's
    seconds in the search), the less known of this task the more conservative:

    - ``_MARGIN`` times the median of what the family's refits measured on this task (this
      run's refits, and ``same_task``: the memory's of earlier runs on it, newest first);
    - else ``_MARGIN`` times the largest the memory holds of other tasks about this size
      (``other_tasks``): one family's scale differs from task to task (LightGBM's refits ran
      0.47 of linear on churn and 1.48 on ames, its early stopping finding more trees);
    - else ``DEFAULT_SCALE``.

    ``family_of``: a node's family (``refit_family`` of its script)."""

    same_task: Mapping[str, Sequence[float]] = field(default_factory=dict)
    other_tasks: Mapping[str, Sequence[float]] = field(default_factory=dict)
    family_of: Callable[[Node], str] = lambda node: refit_family(node, "")
    _families: dict[str, str] = field(default_factory=dict)  # a node's family, read once

    def family(self, node: Node) -> str:
        if node.id not in self._families:
            self._families[node.id] = self.family_of(node)
        return self._families[node.id]

    def measured(self, run: RunDir, graph: SearchGraph) -> dict[str, list[float]]:
        """This run's refits' scales, per family (a resume's earlier final stage measured them)."""
        found: dict[str, list[float]] = {}
        grow = growth(run)
        for refit in graph:
            original = graph.nodes.get(str(refit.meta.get("refit_of"))) if refit.op == Op.REFIT else None
            scale = refit_scale(refit, original, grow) if original is not None else None
            if original is not None and scale is not None:
                found.setdefault(self.family(original), []).append(scale)
        return found

    def of(self, run: RunDir, graph: SearchGraph) -> Callable[[Node], float]:
        """A node's scale now (mlguild.run.refit's ``scale_of``)."""
        measured = self.measured(run, graph)

        def scale(node: Node) -> float:
            name = self.family(node)
            here = [*measured.get(name, ()), *self.same_task.get(name, ())]
            if here:
                return _MARGIN * statistics.median(here)
            elsewhere = self.other_tasks.get(name)
            return _MARGIN * max(elsewhere) if elsewhere else DEFAULT_SCALE

        return scale


@dataclass(frozen=True)
class Reserve:
    """What the search keeps back, in seconds: ``refit_s`` for the refit (of ``node``, the
    candidate it is sized for, or None), ``audit_s`` for the confirmation audit and the grade."""

    refit_s: float
    audit_s: float
    node: str | None = None
    planned: bool = False  # it covers the refit of the blend about to be made

    @property
    def total_s(self) -> float:
        return self.refit_s + self.audit_s


def harness_seconds(graph: SearchGraph) -> float:
    """The harness's measured seconds per node it scored (the mean over scored search nodes)."""
    measured = [n.timing["harness_s"] for n in graph if n.ok and n.op != Op.REFIT and "harness_s" in n.timing]
    return sum(measured) / len(measured) if measured else _DEFAULT_HARNESS_S


def audit_seconds(graph: SearchGraph) -> float:
    """The confirmation audit (the best node, the best single node, the best blend, the constant
    baseline) and the once-only grade, each one scoring as long as the harness's per node."""
    return (3 + 1 + 1) * harness_seconds(graph) if graph.best() is not None else 0.0


def refittable(
    run: RunDir,
    graph: SearchGraph,
    left_s: float,
    first: Node | None = None,
    may: Callable[[Node], bool] | None = None,
    scales: RefitScales | None = None,
    seconds: Callable[[RunDir, SearchGraph, Node, ScaleOf], float] = refit_seconds,
) -> Node | None:
    """The node the final stage refits with ``left_s`` seconds: ``first`` (the final base)
    when its refit fits, else the best-ranked scored node whose refit fits (and that ``may``
    stand in for ``first``, when given); None when none does. ``seconds``: what a node's refit
    needs (the final stage: ``finishing_seconds``, which trusts a deadline-bound script)."""
    scale_of = (scales or RefitScales()).of(run, graph)
    order = ([first] if first is not None else []) + [n for n in graph.ranked() if first is None or n.id != first.id]
    for node in order:  # ``may`` only of the nodes whose refit fits: it may be costly (a bootstrap)
        if seconds(run, graph, node, scale_of) <= left_s and (node is first or may is None or may(node)):
            return node
    return None


def final_reserve(
    run: RunDir,
    graph: SearchGraph,
    planned: Iterable[str] = (),
    in_flight: Iterable[float] = (),
    scales: RefitScales | None = None,
) -> Reserve:
    """The time the search keeps back for the final stage (see the module docstring):
    ``planned``, the members of a blend about to be made; ``in_flight``, the seconds the
    scripts running now are expected to take (any of them may become the best, and its refit
    needs that much times the growth of the training file, at the default scale: its family
    is not known yet); ``scales``, the families' measured scales (None: the default's)."""
    audit, planned = audit_seconds(graph), tuple(planned)
    if not run.config.final.refit:
        return Reserve(0.0, audit)
    scales = scales or RefitScales()
    scale_of = scales.of(run, graph)
    best, blend = graph.best(), best_blend(graph)
    # The final stage takes the best blend over the best node only within noise of it: a blend
    # beyond the promotion margin is not refitted, and its chain of refits is not waited for (a
    # 5-minute ames run kept 103 s for a blend far behind and refitted a single node in 7 s).
    # Not the final stage's own question (paired bootstrap resamples), which finds more blends
    # within noise on a small holdout: the confirmation split then picks either, and a reserve
    # sized for the blend is lost when it picks the node (schools at 5 minutes: 93.7% of the
    # budget used, against 98.6%), while a blend whose refit does not fit gives way to its best
    # member within noise, refitted (titanic: the two within noise, as good a final either way).
    blend = blend if blend is not None and near(graph, best)(blend) else None
    candidates: list[tuple[Node | None, float]] = [
        (n, refit_seconds(run, graph, n, scale_of)) for n in (best, blend) if n is not None
    ]
    budget = run.config.budget.time_s
    cap = None if budget is None else run.config.final.max_refit_share * budget
    planned_s = planned_blend_seconds(run, graph, planned, scale_of) if planned else 0.0
    kept = bool(planned) and (cap is None or planned_s <= cap)  # a blend whose refit is over the cap: not waited for
    if kept:
        candidates.append((None, planned_s))
    grow = growth(run)
    candidates += [(None, expected_refit_seconds(grow, seconds)) for seconds in in_flight]
    node, needed = max(candidates, key=lambda c: c[1], default=(None, 0.0))
    if cap is not None and needed > cap:  # not waited for: the best node near the best whose refit fits the cap
        fallback = refittable(run, graph, cap, best, may=near(graph, best), scales=scales)
        if fallback is not None:
            node, needed = fallback, refit_seconds(run, graph, fallback, scale_of)
        else:  # none near it fits: the cap, for the best's refit on as many rows as it allows
            node, needed = best, cap if best is not None else 0.0
    return Reserve(needed, audit, node.id if node is not None else None, kept)


def near(graph: SearchGraph, best: Node | None) -> Callable[[Node], bool]:
    """Whether a node's holdout score is within the search's promotion margin of ``best``'s
    (the measured noise floor, or the assumed one, times ``evidence_z``): a node the final
    stage may refit in the best's place (it asks paired bootstrap resamples; the reserve, made
    at every node, asks this cheaper question). Without a margin to go by, every node is."""
    if best is None or best.score is None or graph.evidence is None:
        return lambda node: True
    margin, top = graph.margin(best, graph.noise_floor()), best.score
    return lambda node: node.score is not None and abs(node.score - top) <= margin
