"""The short result section of every node's report.md, the same for every brain.

It says what a human (or a later prompt) needs to build on the node: how it scored against
its parent and against the best node before it, what its change taught (for a recipe move),
how a blend weighted its members, and what it cost in time. Every number comes from the
harness (sealed holdout scores, measured run times), never from the script's printout.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Op, Status


def result_lines(node: Node, graph: SearchGraph, metric_name: str, node_dir: Path) -> list[str]:
    lines: list[str] = []
    parent = graph.nodes.get(node.parents[0]) if node.parents and node.op in (Op.IMPROVE, Op.DEBUG) else None
    if node.ok:
        if parent is not None and parent.ok:
            lines.append(f"- against its parent {parent.id} ({_shown(parent)}): {_versus(graph, node, parent)}")
        earlier = _best_before(graph, node)
        if earlier is not None and earlier is not parent:
            lines.append(
                f"- against the best node before it, {earlier.id} ({_shown(earlier)}): {_versus(graph, node, earlier)}"
            )
        elif earlier is None:
            lines.append("- the first scored node of the run")
        move = node.meta.get("move")
        if node.op == Op.IMPROVE and move and parent is not None and parent.ok:
            verdict = _verdict(graph, node, parent)
            lines.append(f"- lesson: `{move}` {verdict} on {node.meta.get('recipe', 'this recipe')} here")
    elif node.status not in (Status.PENDING, Status.FINAL_OK):
        last = ((node.failure or "").strip().splitlines() or ["no message"])[-1]
        lines.append(f"- failed as `{node.status}`: {last[:300]}")
        if parent is not None and node.meta.get("move"):
            lines.append(f"- lesson: `{node.meta['move']}` on {parent.id} ended in `{node.status}`")
    if node.is_blend:
        lines += _blend_lines(node_dir / "output" / "fuse_weights.json")
    if isinstance(node.meta.get("review"), dict):
        lines += [f"- {line.strip()}" for line in review_lines(node.meta["review"])]
    seconds = node.timing.get("exec_s")
    if seconds is not None:
        cost = f"- run time {seconds:.1f} s"
        base = parent.timing.get("exec_s") if parent is not None else None
        if base:
            cost += f" (parent {base:.1f} s, ×{seconds / base:.2f})"
        lines.append(cost)
    return lines


def review_lines(record: dict) -> list[str]:
    """A script's code review before it ran (mlguild.brains.llm.review), as lines: its
    status and cost, each finding, and why it went unreviewed or unrevised."""
    status = record.get("status", "unreviewed")
    cost = f"{record.get('requests', 0)} request(s), {record.get('tokens', 0)} tokens, ${record.get('cost_usd', 0):.4f}"
    lines = [f"review: {status} ({cost})"]
    for f in record.get("findings", []):
        where = f"line {f['line']}" if f.get("line") else "no line"
        lines.append(f"  {f['severity']} {f['name']} ({where}): {f['why']}")
    if record.get("note"):
        lines.append(f"  {record['note']}")
    return lines


def _shown(node: Node) -> str:
    """A scored node's score, named as pooled where it is (a small holdout's ranking score)."""
    return f"{node.score:.6g}" + (" pooled" if node.holdout_score is not None else "")


def _versus(graph: SearchGraph, node: Node, other: Node) -> str:
    if node.score is None or other.score is None:  # callers pass scored (ok) nodes only
        raise ValueError(f"no score to compare: {node.id} or {other.id}")
    delta = node.score - other.score
    return f"{delta:+.6g}, {_verdict(graph, node, other)}"


def _verdict(graph: SearchGraph, node: Node, other: Node) -> str:
    mine, theirs = graph.score_of(node), graph.score_of(other)
    if mine.better_than(theirs):
        return "better"
    return "worse" if theirs.better_than(mine) else "no change"


def _best_before(graph: SearchGraph, node: Node) -> Node | None:
    best: Node | None = None
    for other in graph:
        if other.id == node.id:
            break
        if other.ok and (best is None or graph.score_of(other).better_than(graph.score_of(best))):
            best = other
    return best


def _blend_lines(path: Path) -> list[str]:
    if not path.is_file() or path.is_symlink():
        return []
    try:
        report = json.loads(path.read_text())
        if "column_weights" in report:  # a blend of several target columns: weights per column
            return _column_blend_lines(report)
        weights = ", ".join(f"{m} {w:.2f}" for m, w in report["weights"].items())
        members = report["member_oof_scores"]
        lines = [
            f"- blend weights (fitted on out-of-fold predictions): {weights}",
            f"- out-of-fold {report['oof_metric']}: blend {report['blend_oof_score']:.6g}, members "
            + ", ".join(f"{m} {s:.6g}" for m, s in members.items())
            + " (printed by the script: a guide only)",
        ]
        honest = report.get("cross_validated_scores") or {}
        if honest:  # the selection beside the stackers: the better cross-validated score predicts
            lines.append(
                f"- ensemble: {report.get('method', 'selection')}, chosen by cross-validated out-of-fold "
                f"{report['oof_metric']}: " + ", ".join(f"{k} {v:.6g}" for k, v in honest.items())
            )
        return lines
    except (ValueError, KeyError, TypeError, AttributeError):
        return ["- fuse_weights.json is not in the expected format"]


def _column_blend_lines(report: dict) -> list[str]:
    def listed(values: dict) -> str:
        return ", ".join(f"{m} {v:.2f}" for m, v in values.items())

    blend = report["blend_oof_scores"]
    return [
        "- blend weights per target (fitted on out-of-fold predictions): "
        + "; ".join(f"{t}: {listed(w)}" for t, w in report["column_weights"].items()),
        f"- out-of-fold {report['oof_metric']} per target, blend then members: "
        + "; ".join(
            f"{t}: {blend[t]:.6g} ({', '.join(f'{m} {s:.6g}' for m, s in members.items())})"
            for t, members in report["member_oof_scores"].items()
            if t in blend
        )
        + " (printed by the script: a guide only)",
    ]


__all__ = ["result_lines", "review_lines"]
