"""The baseline ladder: where a run's numbers stand between what anyone gets for free and
what can be had at best.

Its rungs, each a holdout score the harness computed on sealed labels (none from a
script's printout; for a node ranked by a pooled score on a small holdout, its holdout part,
so that every rung is on the floor's scale, and ``what`` names the pooled score):

- ``floor``: the best constant prediction (the sample submission's, or the training prior's);
- ``linear`` and ``lightgbm``: the reference models the harness runs itself
  (mlguild.run.references), or why a rung was skipped or has not run;
- ``best``: the search's best node;
- ``final``: the node the final submission comes from (a refit has no holdout score of its
  own: its base node's is shown);
- ``ceiling``: ``final.reference_score`` (``--reference-score``) when given, else the
  metric's best value (1 for AUC or accuracy, 0 for an error).

Each rung with a score has ``headroom``, the share of the floor-to-ceiling gap it closes,
and ``gained``, the share it adds over the rung below it that has a score. The ladder is in
``final/final.json``, in ``mlguild status`` and in ``mlguild status --json``.
"""

from __future__ import annotations

from typing import Any

from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Event
from ..metrics import get_metric
from ..scoring.floors import floors

RUNG_NAMES = ("floor", "linear", "lightgbm", "best", "final", "ceiling")


def ladder(
    records: list[dict[str, Any]],
    graph: SearchGraph,
    best_id: str | None,
    choice: dict[str, Any] | None,
    metric_name: str,
    reference_score: float | None = None,
) -> dict[str, Any]:
    """The ladder of a run from its journal ``records``, replayed ``graph``, best node and
    final ``choice`` (None before one is made)."""
    metric = get_metric(metric_name)
    sign = 1.0 if metric.direction == "maximize" else -1.0
    rungs: list[dict[str, Any]] = []
    measured = floors(records)
    floor = max(measured, key=lambda f: sign * f) if measured else None
    rungs.append({"rung": "floor", "score": floor, "what": "the best constant prediction"})
    skipped = {str(r["rung"]): str(r["reason"]) for r in records if r["type"] == Event.REFERENCE_SKIPPED}
    for rung in ("linear", "lightgbm"):
        node = next((n for n in graph if n.meta.get("reference") == rung), None)
        if node is not None:
            what = _pooled(node) if node.ok else f"{node.status}" if node.finished else "running"
            rungs.append({"rung": rung, "score": _holdout(node), "node": node.id, "what": what})
        else:
            rungs.append(
                {"rung": rung, "score": None, "what": f"skipped: {skipped[rung]}" if rung in skipped else "not run"}
            )
    best = graph.nodes.get(best_id) if best_id else None
    rungs.append({"rung": "best", "score": _holdout(best), "node": best_id, "what": _pooled(best)})
    if choice is not None:
        base = graph.nodes.get(choice["base"])
        what = f"refit of {choice['base']}; its holdout score" if choice.get("refit") else ""
        what = "; ".join(x for x in (what, _pooled(base)) if x)
        rungs.append({"rung": "final", "score": _holdout(base), "node": choice["node"], "what": what})
    else:
        rungs.append({"rung": "final", "score": None, "what": "not chosen yet"})
    ceiling = reference_score if reference_score is not None else metric.perfect
    if ceiling is not None and ceiling != ceiling:  # NaN: a user's metric file, whose best value nobody knows
        ceiling = None
    source = "--reference-score" if reference_score is not None else "the metric's best value"
    rungs.append({"rung": "ceiling", "score": ceiling, "what": source})
    _headroom(rungs, floor, ceiling)
    return {"metric": metric.name, "direction": metric.direction, "rungs": rungs}


def _holdout(node: Node | None) -> float | None:
    """A scored node's holdout score: the holdout part where the search ranked it by a pooled score."""
    if node is None or not node.ok:
        return None
    return node.holdout_score if node.holdout_score is not None else node.score


def _pooled(node: Node | None) -> str:
    """Words naming the pooled score a node was ranked by, or "" for a node ranked by its holdout."""
    if node is None or node.holdout_score is None or node.score is None:
        return ""
    return f"ranked by pooled {node.score:.5g}"


def _headroom(rungs: list[dict[str, Any]], floor: float | None, ceiling: float | None) -> None:
    """Each scored rung's share of the floor-to-ceiling gap, and what it adds over the last
    scored rung below it (None where there is no gap to measure)."""
    gap = None if floor is None or ceiling is None or ceiling == floor else ceiling - floor
    below: float | None = None
    for rung in rungs:
        score = rung["score"]
        # + 0.0: the floor's own share of a falling gap (an error metric) is -0.0, shown as "-0.0%"
        share = None if gap is None or score is None else round((score - floor) / gap, 4) + 0.0
        rung["headroom"] = share
        rung["gained"] = None if share is None or below is None else round(share - below, 4)
        if share is not None:
            below = share


def ladder_lines(doc: dict[str, Any]) -> list[str]:
    """The ladder as lines of at most 80 columns, for ``mlguild status``."""
    lines = [f"baseline ladder ({doc['metric']}, {doc['direction']}; share of the floor-to-ceiling headroom):"]
    for rung in doc["rungs"]:
        score = f"{rung['score']:.5g}" if rung["score"] is not None else "—"
        share = f"{100 * rung['headroom']:.1f}%" if rung.get("headroom") is not None else ""
        what = " ".join(x for x in (rung.get("node") or "", rung.get("what") or "") if x)
        lines.append(f"  {rung['rung']:<9}{score:>10} {share:>7}  {what}"[:80].rstrip())
    return lines
