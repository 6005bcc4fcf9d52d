"""Whether the LLM's code reviews pay, per run: how often a review was asked for, how often it
changed a script, whether a changed script scored better than the node it was built on, and
what the reviews cost (the ledger's ``review`` and ``revise`` requests). ``mlguild status``
prints it and its JSON document holds it (``reviews``); the counts come from each node's
``meta["review"]`` (mlguild.brains.llm.review), journaled with the node."""

from __future__ import annotations

from typing import Any

from ..core.graph import SearchGraph
from ..core.score import Direction, Score
from ..core.vocabulary import Event
from ..llm.ledger import Ledger

_ASKED = ("passed", "revised", "revision_failed", "unreviewed")


def review_tally(graph: SearchGraph, records: list[dict[str, Any]], direction: Direction) -> dict[str, Any]:
    """``asked`` (review requests made), each status's count (``passed``, ``revised``,
    ``revision_failed``, ``unreviewed``, ``skipped``: small edits not reviewed), of the revised
    nodes those ``scored`` and those that scored ``better`` than their parent (``compared``: the
    revised nodes with a scored parent), and the review requests' ``tokens`` and ``cost_usd``."""
    counts = dict.fromkeys((*_ASKED, "skipped"), 0)
    scored = compared = improved = 0
    for node in graph:
        record = node.meta.get("review")
        if not isinstance(record, dict) or record.get("status") not in counts:
            continue
        counts[record["status"]] += 1
        if record["status"] != "revised" or node.score is None:
            continue
        scored += 1
        parent = graph.nodes.get(node.parents[0]) if node.parents else None
        if parent is not None and parent.score is not None:
            compared += 1
            improved += Score(node.score, direction).better_than(Score(parent.score, direction))
    ledger = Ledger.from_records(r for r in records if r.get("type") == Event.LLM_CALL)
    spent = [t for p, t in ledger.by_purpose.items() if p in ("review", "revise")]
    return {
        "asked": sum(counts[s] for s in _ASKED),
        **counts,
        "revised_scored": scored,
        "revised_compared": compared,
        "revised_better": improved,
        "tokens": sum(t.input_tokens + t.output_tokens for t in spent),
        "cost_usd": round(sum(t.cost_usd for t in spent), 6),
    }


def reviews_line(tally: dict[str, Any]) -> str:
    """The tally in one line for ``mlguild status`` ("" when the run had no review)."""
    if not tally["asked"] and not tally["skipped"]:
        return ""
    outcome = ""
    if tally["revised"]:
        outcome = (
            f"; of the {tally['revised']} revised, {tally['revised_better']} of {tally['revised_compared']} "
            "with a scored parent scored better than it"
        )
    return (
        f"reviews: {tally['asked']} asked ({tally['passed']} passed, {tally['revised']} revised, "
        f"{tally['revision_failed']} revision failed, {tally['unreviewed']} unreadable), "
        f"{tally['skipped']} small edits not reviewed{outcome}; {tally['tokens']:,} tokens, ${tally['cost_usd']:.4f}"
    )
