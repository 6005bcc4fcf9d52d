"""The search graph: nodes with parents, outcomes and scores.

A node may have several parents (a fuse blends the predictions of several), so this is a
graph, not a tree. The graph is rebuilt from the journal on resume; nothing here touches the disk.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from .meta import NodeMeta
from .score import Direction, Score
from .vocabulary import FAILURES, NodeStatus, Op, Status


@dataclass
class Node:
    id: str
    op: Op
    parents: tuple[str, ...]
    iteration: int
    plan: str = ""
    meta: NodeMeta = field(default_factory=NodeMeta)
    title: str = ""  # one line the brain wrote with its plan (mlguild.core.titles)
    status: NodeStatus = Status.PENDING
    score: float | None = None
    failure: str | None = None
    printed_score: float | None = None
    oof_score: float | None = None  # its out-of-fold predictions scored by the harness on the training labels
    holdout_score: float | None = None  # the holdout alone, set when ``score`` is the pooled score (small holdouts)
    pooled_spread: float | None = None  # the pooled score's bootstrap spread over the rows it was scored on
    flags: list[str] = field(default_factory=list)  # leak-check flags (mlguild.scoring.flags)
    debug_depth: int = 0  # consecutive debug steps along this lineage
    branch: str = ""  # id of the draft this lineage started from
    timing: dict[str, float] = field(default_factory=dict)
    attempts: int = 0  # executions started (a resume may restart one)
    code_sha256: str = ""  # of the proposed solution.py, as journaled
    outputs: list[str] = field(default_factory=list)  # optional outputs it wrote, e.g. "oof"

    @property
    def finished(self) -> bool:
        return self.status != Status.PENDING

    @property
    def ok(self) -> bool:
        return self.status == Status.SCORED and self.score is not None

    @property
    def is_blend(self) -> bool:
        """It averages its parents' predictions (their outputs are staged into it, a refit
        reruns them first). The recipe brain answers a fuse with a blend, and runs before
        the blend op had its own name recorded blends as fuses: the meta's member list says."""
        return self.op == Op.BLEND or isinstance(self.meta.get("fuse"), list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["parents"] = list(self.parents)
        return data


@dataclass(frozen=True)
class Evidence:
    """The rule by which a node becomes the best: a node that beats the best by less than
    the noise margin (``z`` times the task's seed spread, or ``assumed_noise`` of the best's
    score until re-runs have measured it) is promoted only once it has ``reruns`` re-runs
    with other seeds, and then on its mean score."""

    reruns: int = 2
    z: float = 1.0
    assumed_noise: float = 0.002


class SearchGraph:
    """Nodes in creation order, with the metric direction that defines "better", and the
    evidence rule for the best node (None: simply the best holdout score)."""

    def __init__(self, direction: Direction, evidence: Evidence | None = None):
        self.direction = direction
        self.evidence = evidence
        self.nodes: dict[str, Node] = {}
        self._reruns: list[Node] = []  # the re-run nodes, kept apart: evidence reads them often
        # Near-tie candidates whose seed check was waived (mlguild.run.gate): they stay behind
        # the best, and no re-run of them is asked for.
        self.waived: set[str] = set()

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
        node.branch = node.branch or (parent.branch if parent and node.op not in (Op.FUSE, Op.BLEND) else node.id)
        if node.op == Op.DEBUG and parent is not None:
            node.debug_depth = parent.debug_depth + 1
        self.nodes[node.id] = node
        if node.op == Op.RERUN:
            self._reruns.append(node)
        return node

    def score_of(self, node: Node) -> Score:
        return Score(node.score, self.direction) if node.ok else Score.worst(self.direction)

    def best(self, exclude_blends: bool = False) -> Node | None:
        """The best node (earliest wins a tie), blends left out with ``exclude_blends``: by
        holdout score, or, under an evidence rule, the last node promoted by it."""
        return self._walk(exclude_blends)[0]

    def pending_evidence(self) -> Node | None:
        """The node that would be the best but for the re-runs it still needs, if any."""
        return self._walk(False)[1]

    def _walk(self, exclude_blends: bool) -> tuple[Node | None, Node | None]:
        """(best, pending) in one pass over the nodes in creation order."""
        sign = 1.0 if self.direction == "maximize" else -1.0
        groups = self.rerun_groups() if self.evidence is not None else {}
        noise: list[float | None] = []  # computed once, on first need

        def key(node: Node) -> float:  # larger is better: the seed mean when it has re-runs
            return self.mean_key(node, groups) if node.id in groups else sign * node.score  # type: ignore[operator]

        best: Node | None = None
        best_key = pending_key = -math.inf
        pending: Node | None = None
        for node in self.nodes.values():
            if node.score is None or node.status != Status.SCORED:
                continue
            mine = key(node)
            if mine <= best_key or node.op == Op.RERUN or (exclude_blends and node.is_blend):
                continue  # the cheap test first: most nodes are behind the best so far
            if best is None or self.evidence is None:
                best, best_key = node, mine
                continue
            reruns = groups.get(node.id, ())
            if any(not r.ok for r in reruns):
                continue  # it failed with another seed: not reliably better, whatever its mean
            tried = len(reruns)
            if not tried and not noise:
                noise.append(self.noise_floor(groups))
            # A clear gain needs no re-runs; once a node's re-runs started, its mean decides.
            if tried >= self.evidence.reruns or (not tried and mine - best_key >= self.margin(best, noise[0])):
                best, best_key = node, mine
            elif not node.is_blend:
                pending, pending_key = node, mine
            # A blend inside the margin stays behind: it averages its members' stored predictions,
            # so a re-run with another seed would measure nothing (the final stage's paired
            # bootstrap weighs the best blend against the best node again).
        if pending is not None and pending_key <= best_key:
            pending = None
        return best, pending

    def rerun_groups(self) -> dict[str, list[Node]]:
        """Per node, its finished re-runs (scored or not), oldest first."""
        groups: dict[str, list[Node]] = {}
        for node in self._reruns:
            if node.finished and node.parents:
                groups.setdefault(node.parents[0], []).append(node)
        return groups

    def mean_key(self, node: Node, groups: dict[str, list[Node]] | None = None) -> float:
        """The sort key (larger is better) of the node's mean score over its seeds."""
        groups = self.rerun_groups() if groups is None else groups
        scores = [n.score for n in [node, *groups.get(node.id, [])] if n.ok and n.score is not None]
        return Score(sum(scores) / len(scores), self.direction).key() if scores else Score.worst(self.direction).key()

    def noise_floor(self, groups: dict[str, list[Node]] | None = None) -> float | None:
        """The seed spread measured on this task: the pooled standard deviation of the
        scores of each node and its re-runs (None before any re-run scored)."""
        groups = self.rerun_groups() if groups is None else groups
        variances, weights = [], []
        for node_id, reruns in groups.items():
            scores = [n.score for n in [self.nodes[node_id], *reruns] if n.ok and n.score is not None]
            if len(scores) >= 2:
                mean = sum(scores) / len(scores)
                variances.append(sum((s - mean) ** 2 for s in scores))
                weights.append(len(scores) - 1)
        return (sum(variances) / sum(weights)) ** 0.5 if weights else None

    def margin(self, best: Node, noise: float | None) -> float:
        """How much a node must beat ``best`` by to be promoted without re-runs, given the
        measured ``noise`` floor (None: not measured yet)."""
        assert self.evidence is not None
        if noise is None and best.pooled_spread is not None:  # a pooled score: its rows' bootstrap
            noise = best.pooled_spread
        if noise is None:
            noise = self.evidence.assumed_noise * abs(best.score or 0.0)
        return self.evidence.z * noise

    def ranked(self) -> list[Node]:
        """Scored nodes, best holdout score first (re-runs, which repeat a node, left out)."""
        return sorted(
            (n for n in self.nodes.values() if n.ok and n.op != Op.RERUN), key=lambda n: -self.score_of(n).key()
        )

    def children(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes.values() if node_id in n.parents]

    def drafts(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.op == Op.DRAFT]

    def failed_leaves(self) -> list[Node]:
        """Finished, failed search nodes that nothing has been built on yet (a failed final
        refit is not repaired: the final submission falls back to the best node)."""
        with_children = {p for n in self.nodes.values() for p in n.parents}
        return [
            n
            for n in self.nodes.values()
            if n.status in FAILURES and n.id not in with_children and n.op not in (Op.REFIT, Op.RERUN, Op.EDA)
        ]

    def stagnation(self, node_id: str) -> int:
        """Finished nodes in ``node_id``'s branch since the branch's best score was set."""
        branch = self.nodes[node_id].branch
        members = [n for n in self.nodes.values() if n.branch == branch and n.finished and n.op != Op.RERUN]
        best_key, since = None, 0
        for n in members:  # creation order
            key = self.score_of(n).key()
            if n.ok and (best_key is None or key > best_key):
                best_key, since = key, 0
            else:
                since += 1
        return since

    def order_by_id(self) -> None:
        """Put the nodes in the order their ids were reserved, as a live run holds them: a
        replay adds each node when it started, and several workers start theirs out of order."""

        def reserved(node_id: str) -> tuple[float, str]:
            return (int(node_id[1:]) if node_id[1:].isdigit() else math.inf, node_id)

        self.nodes = dict(sorted(self.nodes.items(), key=lambda item: reserved(item[0])))
        self._reruns.sort(key=lambda node: reserved(node.id))

    def next_id(self) -> str:
        """One past the highest id: with several workers an id reserved by a proposal that a
        kill cut short is never journaled, so the count of nodes can be below the highest id."""
        numbers = [int(i[1:]) for i in self.nodes if i[:1] == "n" and i[1:].isdigit()]
        return f"n{max(numbers, default=0) + 1:04d}"
