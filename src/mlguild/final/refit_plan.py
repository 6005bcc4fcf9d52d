"""What the final stage refits in the time it has (``plan_refit``): the base node on every
labelled row when its refit fits; else, in this order, the member a blend gives all its weight
to, a script whose fits stop at their deadline (on every row, with fewer trees), the best node
within noise of the base whose refit on every row fits, the base on as many of the labelled
rows as fit (when at least as many as the search trained on), or nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.graph import Node, SearchGraph
from ..run.refit import finishing_seconds, growth, node_refit_seconds, refit_chain, refit_seconds, sole_member
from ..run.reserve import RefitScales, near, refittable
from ..rundir.folder import RunDir

# Against a refit on fewer than this share of the labelled rows, a node within the search's
# promotion margin of the base may stand in for it too (not only one within noise by paired
# bootstrap resamples), refitted on every row: at that share, doubling the rows gains more
# than a difference that small.
PARTIAL_SHARE = 0.5


@dataclass
class RefitPlan:
    """``base``: the node the final submission comes from (a blend's sole member, when that is
    refitted in its place); ``node``: what is refitted (None: nothing, ``short`` says why);
    ``grow``: how much larger its training file is than the search's; ``window``: the labelled
    rows it trains on when not all of them; ``needed_s``: what the base's refit was estimated
    at; ``reason``: the base's reason with what this plan decided; ``fallback``: the node refitted
    in the base's place (``final.json``'s ``refit_fallback``); ``refit_on``: its rows, in words."""

    base: Node
    node: Node | None
    grow: float
    needed_s: float
    reason: str
    short: str = ""
    window: int | None = None
    fallback: dict[str, Any] | None = None
    refit_on: str = "all labelled rows"


def plan_refit(
    run: RunDir,
    graph: SearchGraph,
    base: Node,
    why: str,
    timeout_s: float,
    scales: RefitScales,
    within_noise: Callable[[Node, Node], bool],
) -> RefitPlan:
    """What to refit of ``base`` (chosen for ``why``) in ``timeout_s`` seconds (see the module
    docstring); ``within_noise(base, node)``: whether ``node`` may stand in for the base (paired bootstrap)."""
    scale_of = scales.of(run, graph)
    needed = refit_seconds(run, graph, base, scale_of)
    sole = sole_member(run, base) if needed > timeout_s else None
    if sole is not None and sole in graph.nodes:
        # A blend whose selection gave all its weight to one member predicts as that member:
        # the member refitted by itself (one model on every row, where its script can) costs
        # a fraction of the blend's chain, which refits the member's folds and then the blend.
        why = (
            f"{why}; {base.id} gives all its weight to {sole}, and its refit (about {needed:.0f} s) does not fit "
            f"in the {timeout_s:.0f} s left, so {sole} is refitted by itself"
        )
        base = graph[sole]
        needed = refit_seconds(run, graph, base, scale_of)
    plan = RefitPlan(base, base, growth(run), needed, why)
    if needed <= timeout_s:
        return plan
    if finishing_seconds(run, graph, base, scale_of) <= timeout_s:
        # Its fits stop growing trees at their deadline, so the refit finishes in its limit on
        # every labelled row, with fewer trees than the estimate asked for: more rows, not
        # more trees, is what a model trained on a row sample lacks most.
        plan.reason += (
            f"; its refit is estimated at {needed:.0f} s with {timeout_s:.0f} s left, and its fits stop growing "
            "trees at their deadline, so it is refitted on every labelled row with the trees that time allows"
        )
        return plan
    plan.short = (
        f"not enough time left to refit {base.id} as long as the search ran it "
        f"(needs about {needed:.0f} s, {timeout_s:.0f} s left)"
    )
    # A refit on part of the labelled rows still learns from more of them than the search did
    # (a row sample's node far more: mlguild.run.samples): refit on as many as the time left
    # allows, when that is at least as many as the chain trained on (the latest of them on rows
    # ordered in time: a model that never saw the latest rows is a poor final one; a seeded
    # random share of them otherwise), unless a node within noise of the base can be refitted
    # on every row (below).
    chain = refit_chain(graph, base, run)
    searched = int(run.workspace.manifest()["split"]["train_rows"])
    trained = min(int(n.meta.get("train_rows") or searched) for n in chain)
    labelled = int(plan.grow * searched)
    # The chain's seconds on ``r`` times the search's rows: only its fitting grows with them.
    at = lambda r: sum(node_refit_seconds(n, r, scale_of(n), alone=len(chain) == 1) for n in chain)
    fixed, per_row = at(0.0), (at(1.0) - at(0.0)) / searched
    fits = min(int((timeout_s - fixed) / per_row), labelled) if per_row > 0 else 0
    # A node the holdout cannot tell from the base, refitted on every labelled row, comes
    # before the base refitted on part of them: the rows are a sure gain, and the difference
    # between the two is none the holdout can show (a ten-million-row run refitted its blend
    # on half of the rows where its member within noise of it fitted on all of them). Against
    # a refit on under ``PARTIAL_SHARE`` of the rows, a node within the search's promotion
    # margin of the base also qualifies (``near``): paired bootstrap resamples tell a blend
    # from its own member even 0.0005 AUC apart, less than a model gains from several times
    # the rows.
    close, may = near(graph, base), lambda n: within_noise(base, n)
    few = fits < max(PARTIAL_SHARE * labelled, trained)
    qualifies = (lambda n: close(n) or may(n)) if few else may
    other = refittable(run, graph, timeout_s, base, qualifies, scales, seconds=finishing_seconds)
    if other is None and fits >= trained:
        plan.grow, plan.window = fits / searched, fits
        plan.refit_on = f"{fits} labelled rows"
        which = "the latest" if run.spec.time_column else "a random sample of"
        plan.reason += (
            f"; not enough time to refit on every labelled row (about {needed:.0f} s, {timeout_s:.0f} s left), "
            f"and no node within noise of it whose refit on them fits, so refitted on {which} {fits} "
            "labelled rows, at least as many as the search trained on"
        )
        return plan
    if other is None:
        plan.node, plan.short = None, f"{plan.short}, nor any node within noise of it"
        return plan
    # A model trained on every labelled row, rather than the search's share of them.
    other_s = refit_seconds(run, graph, other, scale_of)
    plan.fallback = {"wanted": base.id, "needed_s": round(needed, 1), "left_s": round(timeout_s, 1)}
    plan.fallback.update(refitted=other.id, refit_s=round(other_s, 1))
    cut = " at full length; its fits stop at their deadline" if other_s > timeout_s else ""
    plan.reason = f"{why}; {plan.short}, so the refit is of {other.id}, the best node whose refit fits (about {other_s:.0f} s{cut})"
    plan.node = other
    return plan
