"""Which node the final submission comes from (``final_base``): the best node on the holdout,
unless the best blend is within noise of it, as paired bootstrap resamples of the holdout rows
(``bootstrap_wins``) and, on such a tie, the confirmation split tell."""

from __future__ import annotations

from contextlib import ExitStack

from ..core.graph import Node, SearchGraph
from ..core.score import Score
from ..run.refit import best_blend
from ..rundir.folder import RunDir
from ..scoring.held_rows import HeldRows
from ..scoring.scorer import Scorer


def final_base(
    run: RunDir,
    graph: SearchGraph,
    holdout: Scorer,
    best: Node,
    confirmation: dict | None = None,
    held: HeldRows | None = None,
) -> tuple[Node, str]:
    """The node the final submission comes from: the best on the holdout, unless the best
    blend is within noise of it. A holdout of a few hundred rows cannot tell apart scores
    that differ by less than their noise, and picking the maximum of many such scores
    favours luck; a blend of several models is the more reliable choice on such a tie.
    "Within noise": the best node beats the blend on fewer than ``final.tie_share`` of
    paired bootstrap resamples of the holdout rows (scored by the harness, outside the sandbox).
    On such a tie, when both were scored on the confirmation split (``confirmation``), the
    one better there is chosen (the blend when equal). ``held``: the run's holdout rows, when
    its holdout inputs hide a confirmation split (only the holdout part is compared)."""
    blend = best_blend(graph)
    if blend is None or blend.id == best.id:
        return best, f"the best node on the holdout ({best.id})"
    wins = bootstrap_wins(run, holdout, best, blend, held)
    needed = run.config.final.tie_share
    confirmed = _confirm_scores(confirmation, best.id, blend.id)
    if wins is not None and wins < needed and confirmed is not None:
        better = (
            best
            if Score(confirmed[0], holdout.metric.direction).better_than(Score(confirmed[1], holdout.metric.direction))
            else blend
        )
        return better, (
            f"the blend {blend.id} is within noise of the best node {best.id} on the holdout "
            f"({best.id} is better on {wins:.0%} of bootstrap resamples, under {needed:.0%}); on the confirmation "
            f"split {best.id} scores {confirmed[0]:.6g} and {blend.id} {confirmed[1]:.6g}, so {better.id}"
        )
    if wins is not None and wins < needed:
        return blend, (
            f"the blend {blend.id} is within noise of the best node {best.id} on the holdout "
            f"({best.id} is better on {wins:.0%} of bootstrap resamples, under {needed:.0%})"
        )
    share = "" if wins is None else f" on {wins:.0%} of bootstrap resamples"
    return best, f"the best node on the holdout ({best.id}, better than the best blend {blend.id}{share})"


def bootstrap_wins(run: RunDir, holdout: Scorer, a: Node, b: Node, held: HeldRows | None = None) -> float | None:
    """The share of paired bootstrap resamples of the holdout rows on which ``a`` scores better
    than ``b`` (the holdout part alone, when ``held`` hides a confirmation split among them)."""
    holdout_file = lambda node: run.node_dir(node.id) / "output" / "holdout.csv"
    with ExitStack() as parts:
        path_a, path_b = holdout_file(a), holdout_file(b)
        if held is not None:
            path_a, path_b = parts.enter_context(held.parts(path_a))[0], parts.enter_context(held.parts(path_b))[0]
        return holdout.bootstrap_wins(path_a, path_b, seed=run.config.brain.seed)


def _confirm_scores(confirmation: dict | None, a: str, b: str) -> tuple[float, float] | None:
    """The confirmation scores of nodes ``a`` and ``b``, when both have one."""
    scores = (confirmation or {}).get("scores", {})
    values = [scores.get(n, {}).get("confirm") for n in (a, b)]
    return (values[0], values[1]) if None not in values else None
