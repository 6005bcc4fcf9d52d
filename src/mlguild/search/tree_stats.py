"""An index of the search graph that Monte Carlo search reads on every choice, kept up to date
as the graph grows instead of being recomputed from every node each time.

For each node: how often its subtree was tried (``visits``) and how well that went
(``reward``), backed up to every ancestor through every parent (a fuse counts for each branch
it drew on); its children in the search tree; and, for the whole graph, the drafts, the failed
leaves, the scored nodes ranked best first, and the search's journaled time.

Rewards and times are kept as integer milli-units so that sums do not depend on the order in
which nodes were taken in: a resumed run rebuilds exactly the numbers the uninterrupted run had.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Op

ROOT = ""  # the virtual root: parent of every draft and fuse in the search tree
_TIMED = ("brain_s", "exec_s", "harness_s")  # the parts of a node's wall time the journal keeps


@dataclass(frozen=True)
class Rewards:
    """What one finished node is worth to the lineage it grew from."""

    valid: float = 1.0  # it produced a scored submission
    new_best: float = 1.0  # ... that beat every node finished before it
    debug_fixed: float = 0.5  # a debug step that repaired its parent
    failure: float = -1.0  # it failed (the penalty: a negative number)

    def of(self, node: Node, was_best: bool) -> int:
        """The node's reward in milli-units."""
        if not node.ok:
            return _milli(self.failure)
        value = self.valid + (self.new_best if was_best else 0.0) + (self.debug_fixed if node.op == Op.DEBUG else 0.0)
        return _milli(value)


def _milli(x: float) -> int:
    return round(x * 1000)


def primary_parent(node: Node) -> str:
    """The node it hangs under in the search tree: its first parent, or ROOT for a draft and
    for a fuse or blend (which draws on several branches and starts a branch of its own)."""
    return ROOT if not node.parents or node.op in (Op.FUSE, Op.BLEND) else node.parents[0]


class TreeStats:
    def __init__(self, rewards: Rewards):
        self.rewards = rewards
        self._reset(0)

    def _reset(self, graph_id: int) -> None:
        self.visits: dict[str, int] = {ROOT: 0}  # finished nodes in the subtree, itself included
        self.reward: dict[str, int] = {ROOT: 0}  # their summed rewards, milli-units
        self.children: dict[str, list[str]] = {ROOT: []}  # in creation order
        self.drafts = 0
        self.searched = 0  # search nodes created (refits are the final stage's)
        self.spent_ms = 0  # journaled wall time of the finished search nodes
        self.failed_leaves: set[str] = set()  # finished, failed, nothing built on them yet
        self.ranked: list[tuple[float, int, str]] = []  # scored nodes: (-score key, creation index, id)
        # Per branch: its best score key, and its nodes finished since that best was set or
        # since its last evolve or fuse (a stagnation move starts the count afresh).
        self.branch_best: dict[str, float] = {}
        self.branch_best_id: dict[str, str] = {}
        self.branch_since: dict[str, int] = {}
        self._graph_id, self._seen = graph_id, 0
        self._pending: list[tuple[int, str]] = []  # created, not finished: (creation index, id)
        self._best_key: float | None = None

    def update(self, graph: SearchGraph) -> list[str]:
        """Take in every node created or finished since the last call; return their ids."""
        if id(graph) != self._graph_id or len(graph) < self._seen:
            self._reset(id(graph))
        changed: list[str] = []
        if len(graph) > self._seen:
            for index, node in enumerate(list(graph.nodes.values())[self._seen :], start=self._seen):
                # Refits are the final stage's, re-runs repeat a node, an exploration scores nothing.
                if node.op not in (Op.REFIT, Op.RERUN, Op.EDA):
                    self._register(node, index)
                    changed.append(node.id)
            self._seen = len(graph)
        still = []
        for index, node_id in self._pending:
            pending = graph.nodes.get(node_id)
            if pending is None:  # reserved by a worker, then dropped: its proposal stopped the run
                continue
            if pending.finished:
                self._absorb(graph, pending, index)
                changed.append(node_id)
            else:
                still.append((index, node_id))
        self._pending = still
        return changed

    def mean(self, node_id: str) -> float:
        """Mean reward of the node's subtree (0 before anything in it finished)."""
        n = self.visits.get(node_id, 0)
        return self.reward.get(node_id, 0) / 1000 / n if n else 0.0

    def _register(self, node: Node, index: int) -> None:
        self.visits[node.id], self.reward[node.id] = 0, 0
        self.children.setdefault(node.id, [])
        self.children.setdefault(primary_parent(node), []).append(node.id)
        self.drafts += node.op == Op.DRAFT
        self.searched += 1
        self.failed_leaves.difference_update(node.parents)
        self._pending.append((index, node.id))

    def _absorb(self, graph: SearchGraph, node: Node, index: int) -> None:
        self.spent_ms += sum(round(1000 * node.timing.get(k, 0.0)) for k in _TIMED)
        key = graph.score_of(node).key() if node.ok else None
        was_best = key is not None and (self._best_key is None or key > self._best_key)
        if key is not None:
            bisect.insort(self.ranked, (-key, index, node.id))
            self._best_key = key if was_best else self._best_key
        elif not self.children[node.id]:
            self.failed_leaves.add(node.id)
        self._track_branch(graph, node, key)
        value = self.rewards.of(node, was_best)
        for ancestor in [*ancestors(graph, node.id), ROOT]:
            self.visits[ancestor] += 1
            self.reward[ancestor] += value

    def _track_branch(self, graph: SearchGraph, node: Node, key: float | None) -> None:
        branch = node.branch
        if key is not None and (branch not in self.branch_best or key > self.branch_best[branch]):
            self.branch_best[branch], self.branch_since[branch] = key, 0
            self.branch_best_id[branch] = node.id
        else:
            self.branch_since[branch] = self.branch_since.get(branch, 0) + 1
        if node.op in (Op.EVOLVE, Op.FUSE) and node.parents and node.parents[0] in graph.nodes:
            self.branch_since[graph[node.parents[0]].branch] = 0  # the branch was shaken up


def ancestors(graph: SearchGraph, node_id: str) -> list[str]:
    """The node and every ancestor through every parent, each once."""
    seen, stack = {node_id}, [node_id]
    while stack:
        current = graph.nodes.get(stack.pop())
        for parent in current.parents if current is not None else ():
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return list(seen)
