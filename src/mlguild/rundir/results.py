"""``results.tsv``: the run's nodes as a table people read (and ``cut``, ``sort``, a spreadsheet).

One line per finished node, appended as each finishes: id, parent, op, status, holdout score,
out-of-fold score, seconds, LLM cost, title. The journal stays the source of truth: the file
is rebuilt from it whenever a session opens the run, so a kill between the two, or a hand
edit, never leaves it wrong for long.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.graph import Node
from ..core.vocabulary import Event
from ..util.fs import atomic_write

RESULTS = "results.tsv"
COLUMNS = ("id", "parent", "op", "status", "holdout_score", "oof_score", "seconds", "cost_usd", "title")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return " ".join(str(value).split())  # no tab or newline may break a row


def line(node: Node, cost_usd: float) -> str:
    cells = (
        node.id,
        ",".join(node.parents),
        node.op,
        node.status,
        node.score if node.holdout_score is None else node.holdout_score,  # the holdout's, never pooled
        node.oof_score,
        round(float(node.timing.get("exec_s", 0.0)), 2),
        round(cost_usd, 6) if cost_usd else None,
        node.title,
    )
    return "\t".join(_cell(c) for c in cells) + "\n"


def node_cost(records: list[dict[str, Any]], node_id: str) -> float:
    """The LLM cost journaled for ``node_id``, scanning back from the end only to its start."""
    cost = 0.0
    for rec in reversed(records):
        if rec["type"] == Event.LLM_CALL and rec.get("node") == node_id:
            cost += float(rec.get("cost_usd") or 0.0)
        elif rec["type"] == Event.NODE_STARTED and rec["node"]["id"] == node_id:
            break
    return cost


def append(run_path: Path, node: Node, records: list[dict[str, Any]]) -> None:
    """Add ``node``'s line (the header first, for a new file)."""
    path = run_path / RESULTS
    new = not path.exists()
    with path.open("a", encoding="utf-8") as out:
        if new:
            out.write("\t".join(COLUMNS) + "\n")
        out.write(line(node, node_cost(records, node.id)))


def rebuild(run_path: Path, nodes: list[Node], records: list[dict[str, Any]]) -> None:
    """Write the whole file again from the replayed ``nodes`` (finished ones, in the order
    they finished) and the journal ``records``."""
    costs: dict[str, float] = {}
    finished_order: list[str] = []
    for rec in records:
        if rec["type"] == Event.LLM_CALL and rec.get("node"):
            costs[rec["node"]] = costs.get(rec["node"], 0.0) + float(rec.get("cost_usd") or 0.0)
        elif rec["type"] == Event.NODE_FINISHED and rec["id"] not in finished_order:
            finished_order.append(rec["id"])
    by_id = {n.id: n for n in nodes}
    rows = [line(by_id[i], costs.get(i, 0.0)) for i in finished_order if i in by_id]
    atomic_write(run_path / RESULTS, "\t".join(COLUMNS) + "\n" + "".join(rows))
