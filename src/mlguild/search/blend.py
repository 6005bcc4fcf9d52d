"""When a prediction blend can help, and of which nodes.

A blend averages the predictions of the best node of several branches, with weights fitted
on their out-of-fold predictions. It can help only when its member set is new: at least two
branches with a scored node that wrote out-of-fold predictions and raised no leak flag, and a
set of best-of-branch nodes that no earlier blend used (a new branch, or a branch that found
a better node). Both policies ask this after each node, at least ``search.fuse_every`` nodes
after the last blend, instead of blending on a fixed count.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..config import SearchConfig
from ..core.graph import Node, SearchGraph
from ..core.protocols import Action
from ..core.vocabulary import Op


def blend_action(graph: SearchGraph, cfg: SearchConfig, ranked: Iterable[Node] | None = None) -> Action | None:
    """A blend of a new member set, or None (blends off, too soon, or nothing new).
    ``ranked``: the scored nodes best first, when the caller keeps them sorted already."""
    if not cfg.fuse_every:
        return None
    since = _nodes_since_last_blend(graph)
    if since is not None and since < cfg.fuse_every:
        return None
    members = blend_members(graph, cfg.fuse_size, ranked)
    if not members:
        return None
    return Action(Op.BLEND, members, f"blend the best node of {len(members)} branches (a member set no blend used)")


def blend_members(graph: SearchGraph, size: int, ranked: Iterable[Node] | None = None) -> tuple[str, ...]:
    """The best node of each of the ``size`` best branches, among scored nodes that wrote
    out-of-fold predictions and raised no leak flag; empty when fewer than two branches
    qualify or a blend of exactly this set exists already."""
    best_of_branch: dict[str, Node] = {}
    for node in graph.ranked() if ranked is None else ranked:
        if not node.is_blend and "oof" in node.outputs and not node.flags:
            best_of_branch.setdefault(node.branch, node)
    members = tuple(n.id for n in list(best_of_branch.values())[:size])
    done = {frozenset(n.parents) for n in graph if n.is_blend}
    return members if len(members) >= 2 and frozenset(members) not in done else ()


def _nodes_since_last_blend(graph: SearchGraph) -> int | None:
    """Nodes made after the last blend (None: no blend yet)."""
    for back, node in enumerate(reversed(graph.nodes.values())):
        if node.is_blend:
            return back
    return None
