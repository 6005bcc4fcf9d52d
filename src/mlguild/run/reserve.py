"""The final stage's reserve: the time the search keeps back for what comes after it, as
this run measured it.

The final stage (mlguild.final.stage) scores its candidates once on the confirmation split,
refits one of them on every labelled row, and grades the final submission once. Each part
is priced from this run's own measurements, re-estimated whenever a node finishes:

- a refit: the candidate's own fit time (a blend: the members it used, every one for a stack, and its own), scaled
  to the larger training file (``refit.node_refit_seconds``);
- the audit and the grade: the harness's measured seconds per node (scoring one file and
  writing its report), once per candidate, the constant baseline and the grade.

The candidates are the best node, the best blend and a blend the search is about to make
(unless its refit alone is over the cap below). The reserve is capped at ``final.max_refit_share`` of the budget: a refit that needs more is
not waited for; the final stage then refits the best node whose refit fits the time left
(``refittable``), which is what the capped reserve is sized for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Op
from ..rundir.folder import RunDir
from .refit import best_blend, expected_refit_seconds, growth, planned_blend_seconds, refit_seconds

_DEFAULT_HARNESS_S = 1.0  # the harness's seconds per scoring before any node measured them


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
) -> Node | None:
    """The node the final stage refits with ``left_s`` seconds: ``first`` (the final base)
    when its refit fits, else the best-ranked scored node whose refit fits (and that ``may``
    stand in for ``first``, when given); None when none does."""
    order = ([first] if first is not None else []) + [n for n in graph.ranked() if first is None or n.id != first.id]
    for node in order:  # ``may`` only of the nodes whose refit fits: it may be costly (a bootstrap)
        if refit_seconds(run, graph, node) <= left_s and (node is first or may is None or may(node)):
            return node
    return None


def final_reserve(
    run: RunDir, graph: SearchGraph, planned: Iterable[str] = (), in_flight: Iterable[float] = ()
) -> Reserve:
    """The time the search keeps back for the final stage (see the module docstring):
    ``planned``, the members of a blend about to be made; ``in_flight``, the seconds the
    scripts running now are expected to take (any of them may become the best, and its refit
    needs that much times the growth of the training file)."""
    audit, planned = audit_seconds(graph), tuple(planned)
    if not run.config.final.refit:
        return Reserve(0.0, audit)
    best = graph.best()
    candidates: list[tuple[Node | None, float]] = [
        (n, refit_seconds(run, graph, n)) for n in (best, best_blend(graph)) if n is not None
    ]
    budget = run.config.budget.time_s
    cap = None if budget is None else run.config.final.max_refit_share * budget
    planned_s = planned_blend_seconds(run, graph, planned) if planned else 0.0
    kept = bool(planned) and (cap is None or planned_s <= cap)  # a blend whose refit is over the cap: not waited for
    if kept:
        candidates.append((None, planned_s))
    grow = growth(run)
    candidates += [(None, expected_refit_seconds(grow, seconds)) for seconds in in_flight]
    node, needed = max(candidates, key=lambda c: c[1], default=(None, 0.0))
    if cap is not None and needed > cap:  # not waited for: the best node whose refit fits the cap
        fallback = refittable(run, graph, cap, best)
        node, needed = fallback, refit_seconds(run, graph, fallback) if fallback is not None else 0.0
    return Reserve(needed, audit, node.id if node is not None else None, kept)
