"""The search graph: nodes with parents, outcomes and scores.

A node may have several parents (a fuse blends the predictions of several), so this is a
graph, not a tree. The graph is rebuilt from the journal on resume; nothing here touches the disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..metrics import Direction, Score
from ..vocabulary import BLEND, DEBUG, DRAFT, FAILURES, FUSE, PENDING, REFIT, SCORED


@dataclass
class Node:
    id: str
    op: str
    parents: tuple[str, ...]
    iteration: int
    plan: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    status: str = PENDING
    score: float | None = None
    failure: str | None = None
    printed_score: float | None = None
    flags: list[str] = field(default_factory=list)  # leak-check flags (mlguild.leakcheck)
    debug_depth: int = 0  # consecutive debug steps along this lineage
    branch: str = ""  # id of the draft this lineage started from
    timing: dict[str, float] = field(default_factory=dict)
    attempts: int = 0  # executions started (a resume may restart one)
    code_sha256: str = ""  # of the proposed solution.py, as journaled
    outputs: list[str] = field(default_factory=list)  # optional outputs it wrote, e.g. "oof"

    @property
    def finished(self) -> bool:
        return self.status != PENDING

    @property
    def ok(self) -> bool:
        return self.status == SCORED and self.score is not None

    @property
    def is_blend(self) -> bool:
        """It averages its parents' predictions (their outputs are staged into it, a refit
        reruns them first). The recipe brain answers a fuse with a blend, and runs before
        the blend op had its own name recorded blends as fuses: the meta's member list says."""
        return self.op == BLEND or isinstance(self.meta.get("fuse"), list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["parents"] = list(self.parents)
        return data


class SearchGraph:
    """Nodes in creation order, with the metric direction that defines "better"."""

    def __init__(self, direction: Direction):
        self.direction = direction
        self.nodes: dict[str, Node] = {}

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def add(self, node: Node) -> Node:
        if node.id in self.nodes:
            raise ValueError(f"node {node.id} already exists")
        parent = self.nodes.get(node.parents[0]) if node.parents else None
        # A fuse or a blend draws on several branches, so it starts a branch of its own.
        node.branch = node.branch or (parent.branch if parent and node.op not in (FUSE, BLEND) else node.id)
        if node.op == DEBUG and parent is not None:
            node.debug_depth = parent.debug_depth + 1
        self.nodes[node.id] = node
        return node

    def score_of(self, node: Node) -> Score:
        return Score(node.score, self.direction) if node.ok else Score.worst(self.direction)

    def best(self, exclude_blends: bool = False) -> Node | None:
        """The scored node with the best holdout score (earliest wins a tie), blends left out
        with ``exclude_blends``."""
        best: Node | None = None
        for node in self.nodes.values():
            if (
                node.ok
                and not (exclude_blends and node.is_blend)
                and (best is None or self.score_of(node).better_than(self.score_of(best)))
            ):
                best = node
        return best

    def ranked(self) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.ok), key=lambda n: -self.score_of(n).key())

    def children(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes.values() if node_id in n.parents]

    def drafts(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.op == DRAFT]

    def failed_leaves(self) -> list[Node]:
        """Finished, failed search nodes that nothing has been built on yet (a failed final
        refit is not repaired: the final submission falls back to the best node)."""
        with_children = {p for n in self.nodes.values() for p in n.parents}
        return [n for n in self.nodes.values() if n.status in FAILURES and n.id not in with_children and n.op != REFIT]

    def stagnation(self, node_id: str) -> int:
        """Finished nodes in ``node_id``'s branch since the branch's best score was set."""
        branch = self.nodes[node_id].branch
        members = [n for n in self.nodes.values() if n.branch == branch and n.finished]
        best_key, since = None, 0
        for n in members:  # creation order
            key = self.score_of(n).key()
            if n.ok and (best_key is None or key > best_key):
                best_key, since = key, 0
            else:
                since += 1
        return since

    def next_id(self) -> str:
        return f"n{len(self.nodes) + 1:04d}"
