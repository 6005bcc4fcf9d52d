"""Feature importances, as scripts write them (``output/importance.csv``: feature, importance;
optional in the script contract, written by the recipes), read for the report and the
dashboard. Only read and shown: no score or choice depends on them."""

from __future__ import annotations

import json

from .runs import RunView, read_importance

SHOWN = 20  # the largest, in the plots


def final_importance(view: RunView) -> tuple[str, list[tuple[str, float]]]:
    """(whose, pairs) for the run's final node (else its best): its own importances, or for a
    blend of predictions the mean of its members' (each member's scaled to sum 1)."""
    try:
        node_id = str(json.loads((view.path / "final" / "final.json").read_text())["node"])
    except (OSError, ValueError, KeyError):
        node_id = view.state.best_id or ""
    if node_id not in view.state.graph.nodes:
        return "", []
    own = read_importance(view.node_dir(node_id), limit=10**9)
    if own:
        return f"node {node_id}", own[:SHOWN]
    parents = [p for p in view.state.graph[node_id].parents if p in view.state.graph.nodes]
    members = {p: read_importance(view.node_dir(p), limit=10**9) for p in parents}
    members = {p: pairs for p, pairs in members.items() if pairs and sum(v for _, v in pairs) > 0}
    if not members:
        return "", []
    totals: dict[str, float] = {}
    for pairs in members.values():
        whole = sum(v for _, v in pairs)
        for name, value in pairs:
            totals[name] = totals.get(name, 0.0) + value / whole / len(members)
    mean = sorted(totals.items(), key=lambda row: -row[1])[:SHOWN]
    return f"node {node_id}, the mean of its members {', '.join(members)}", mean
