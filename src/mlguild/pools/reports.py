"""The report pool: every finished node's report, for the other nodes (and workers) to read.

A report says what a teammate needs to build on an attempt: the method, its components, the
result in harness numbers (sealed holdout score, change against its parent and against the
best node before it, run time against its time limit), what helped or did not, and its
limitations. Nothing in it comes from what a script printed. In the community cycle the model
writes a node's method, component analysis, limitations and next directions from these numbers
(``with_written``; the numbers themselves stay the harness's). The pool lives in the run's
``pools.sqlite`` (mlguild.pools.store), so every worker of a run reads what the others wrote,
and a resume adds the reports of finished nodes it lacks (runs made before the pool existed
included). A brain sees the few reports most relevant to what it is about to do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from ..core.graph import Node, SearchGraph
from ..core.protocols import WrittenReport
from ..core.vocabulary import Op
from .novelty import Overlap
from .store import PoolStore

_TIME_LIMIT_SHARE = 0.8  # a script that used more of its limit than this was close to being cut
_DIGEST_CHARS = 600  # one report as a prompt shows it
_NOT_REPORTED = (Op.REFIT, Op.RERUN, Op.GROW, Op.EDA)  # repeats of a node, or no attempt at the task


@dataclass(frozen=True)
class Report:
    node: str
    op: str
    parents: tuple[str, ...]
    worker: str
    outcome: str  # "new best", "gain", "no gain", "first", "failed"
    score: float | None
    method: str  # the plan's first lines
    components: tuple[str, ...]
    result: str  # harness numbers only
    helped: str  # what the change did, for better or worse
    limitations: tuple[str, ...]
    ideas: tuple[str, ...]  # idea-pool ids the node says it used (mlguild.pools.ideas)
    novel: tuple[str, ...] = ()  # components its plan marks as its own, not from an idea
    steps: int = 1  # runs of its script inside the node (the community cycle's fix loop)
    overlap: float | None = None  # the largest share of its script found in one community item's code
    overlap_item: str = ""  # that knowledge item's id
    near_copy: bool = False  # the overlap reached pools.near_copy_overlap (mlguild.pools.novelty)
    run: str = ""  # the earlier run it came from (mlguild.pools.guild); "" for this run's own nodes
    author: str = "harness"  # "harness", or the model that wrote it from the harness's numbers
    analysis: str = ""  # the model's reading of the harness's numbers
    directions: tuple[str, ...] = ()  # the model's next directions (ideas of origin "report")
    weight: float = 1.0  # how much an earlier run's report counts here (a similar task's: below 1; mlguild.pools.guild)

    def digest(self) -> str:
        """The report as one bounded paragraph."""
        parts = [
            f"{self.node} ({self.op}{' of ' + ', '.join(self.parents) if self.parents else ''}) {self.method}",
            f"components: {', '.join(self.components)}" if self.components else "",
            f"result: {self.result}",
            self.helped,
            f"limitations: {'; '.join(self.limitations)}" if self.limitations else "",
            f"ideas used: {', '.join(self.ideas)}" if self.ideas else "",
            f"new: {'; '.join(self.novel)}" if self.novel else "",
            f"a near-copy of community item {self.overlap_item} ({self.overlap:.0%} of its code)"
            if self.near_copy and self.overlap is not None
            else "",
            f"next: {'; '.join(self.directions)}" if self.directions else "",
        ]
        text = " | ".join(p for p in parts if p)
        return text if len(text) <= _DIGEST_CHARS else text[: _DIGEST_CHARS - 1] + "…"

    def markdown(self) -> list[str]:
        """The sections report.md adds for teammates (method and result are above them)."""
        lines = []
        if self.author != "harness":
            lines += [
                "",
                f"## Report (written by {self.author} from the harness's numbers)",
                f"- method: {self.method}",
            ]
            lines += [f"- results: {self.analysis}"] if self.analysis else []
        lines += ["", "## Components", *(f"- {c}" for c in self.components or ("(none named)",))]
        lines += ["", "## What it showed", f"- {self.helped or self.result}"]
        lines += ["", "## Limitations", *(f"- {x}" for x in self.limitations or ("none seen by the harness",))]
        lines += ["", "## Novelty"]
        lines += [
            f"- from the community's idea pool: {', '.join(self.ideas)}" if self.ideas else "- no idea from the pool"
        ]
        lines += [f"- new: {c}" for c in self.novel] or ["- new: the plan's own (no component marked)"]
        if self.overlap is not None:
            lines.append(
                f"- {'a near-copy: ' if self.near_copy else ''}{self.overlap:.0%} of its script's token runs "
                f"are in the code of community item {self.overlap_item}, the most of any item"
            )
        if self.steps > 1:
            lines.append(f"- its script ran {self.steps} times in the node's refine loop (steps/)")
        if self.directions:
            lines += ["", "## Next directions", *(f"- {d}" for d in self.directions)]
        return lines

    def harness_text(self) -> str:
        """The harness's report as a model reads it before writing its own (stage IV)."""
        lines = [f"- method: {self.method}", f"- outcome: {self.outcome}", f"- result: {self.result}"]
        lines += [f"- {self.helped}"] if self.helped else []
        lines += [f"- component: {c}" for c in self.components]
        sections = self.markdown()
        return "\n".join(lines + sections[sections.index("## Limitations") - 1 :]).strip()


def with_written(report: Report, written: WrittenReport) -> Report:
    """``report`` as the model wrote it: its method, component analysis, reading of the
    numbers, limitations (after the harness's own) and next directions; the result, the
    score and what helped stay the harness's."""
    extra = tuple(x for x in written.limitations if x not in report.limitations)
    return replace(
        report,
        method=written.method or report.method,
        components=written.components or report.components,
        analysis=written.results,
        limitations=report.limitations + extra,
        directions=written.directions,
        author=written.model or "the model",
    )


def report_of(node: Node, graph: SearchGraph, worker: str = "", overlap: Overlap | None = None) -> Report:
    """The report of a finished node, from its record in the graph (harness numbers only), and
    its script's largest overlap with the community's code when that was measured."""
    meta = node.meta
    parent = graph.nodes.get(node.parents[0]) if node.parents else None
    components = [f"{key}: {meta[key]}" for key in ("recipe", "family", "features", "move") if meta.get(key)]
    if meta.get("summary") and not components:
        components.append(" ".join(str(meta["summary"]).split())[:200])
    outcome, result, helped = _result(node, graph, parent)
    limitations = []
    if not node.ok:
        last = ((node.failure or "").strip().splitlines() or ["no message"])[-1]
        limitations.append(f"failed as {node.status}: {last[:200]}")
    exec_s, budget_s = node.timing.get("exec_s"), node.timing.get("budget_s")
    if exec_s and budget_s and exec_s > _TIME_LIMIT_SHARE * budget_s:
        limitations.append(f"used {exec_s:.0f} of its {budget_s:.0f} s limit: a slower change would be cut")
    limitations += [f"flag: {flag}" for flag in node.flags]
    title = node.title or next((ln.strip("#*- ") for ln in node.plan.splitlines() if ln.strip("#*- ")), node.op)
    ideas = tuple(str(i) for i in meta.get("ideas", ()) if isinstance(i, str))
    novel = tuple(str(c) for c in meta.get("novel", ()) if isinstance(c, str))
    return Report(
        node=node.id,
        op=node.op,
        parents=tuple(node.parents),
        worker=worker,
        outcome=outcome,
        score=node.score if node.ok else None,
        method=" ".join(title.split())[:160],
        components=tuple(components),
        result=result,
        helped=helped,
        limitations=tuple(limitations),
        ideas=ideas,
        novel=novel,
        steps=int(meta.get("steps", 1)),
        overlap=overlap.share if overlap else None,
        overlap_item=overlap.item if overlap else "",
        near_copy=overlap.near_copy if overlap else False,
    )


def _result(node: Node, graph: SearchGraph, parent: Node | None) -> tuple[str, str, str]:
    seconds = f", {node.timing['exec_s']:.0f} s" if node.timing.get("exec_s") is not None else ""
    if not node.ok or node.score is None:
        return "failed", f"no score ({node.status}{seconds})", ""
    earlier = [n for n in graph.ranked() if n.id != node.id and n.finished and _before(n, node)]
    best = earlier[0] if earlier else None
    new_best = best is None or graph.score_of(node).better_than(graph.score_of(best))
    result = f"holdout {node.score:.6g}{seconds}"
    helped = ""
    outcome = "new best" if new_best and best is not None else "first" if best is None else "no gain"
    if parent is not None and parent.ok and parent.score is not None:
        gained = graph.score_of(node).better_than(graph.score_of(parent))
        result += f", {node.score - parent.score:+.4g} against its parent {parent.id}"
        # The title, whole: a lesson cut mid-sentence makes a muddled idea (issue 24).
        change = node.meta.get("move") or node.title or node.meta.get("summary") or node.op
        helped = f"{'helped' if gained else 'did not help'}: {' '.join(str(change).split())}"
        if outcome == "no gain" and gained:
            outcome = "gain"
    if best is not None:
        result += f"; best before it {best.id} {best.score:.6g}"
    return outcome, result, helped


def _before(other: Node, node: Node) -> bool:
    return other.iteration < node.iteration


class ReportPool:
    """The run's reports, searchable by full text."""

    def __init__(self, store: PoolStore):
        self.store = store

    def add(self, report: Report) -> None:
        body = " ".join([report.op, report.outcome, report.method, *report.components, report.helped, report.result])
        self.store.put("reports", report.node, json.dumps(asdict(report)), body)

    def sync(
        self, graph: SearchGraph, worker: str = "", overlap_of: Callable[[Node], Overlap | None] = lambda n: None
    ) -> int:
        """Add the report of every finished node the pool lacks; how many were added."""
        have = set(self.store.keys("reports"))
        added = 0
        for node in graph:
            if node.finished and node.op not in _NOT_REPORTED and node.id not in have:
                self.add(report_of(node, graph, worker, overlap_of(node)))
                added += 1
        return added

    def relevant(self, query: str, k: int, skip: set[str] | frozenset[str] = frozenset()) -> list[Report]:
        """The ``k`` reports that best match ``query``, leaving out the nodes in ``skip``; the
        newest reports fill in when fewer match."""
        if k <= 0:
            return []
        found = [r for r in self.store.search("reports", query, k + len(skip)) if r not in skip]
        found = self._weighted(query, found, skip)
        if len(found) < k:
            found += [r for r in reversed(self.store.keys("reports")) if r not in skip and r not in found]
        return [self.get(key) for key in found[:k]]

    def _weighted(self, query: str, found: list[str], skip: set[str] | frozenset[str]) -> list[str]:
        """``found`` again, each report's relevance times its weight, when earlier runs' reports
        (keyed ``RUN/NODE``, mlguild.pools.guild) are in the pool; else unchanged."""
        if not any("/" in key for key in self.store.keys("reports")):
            return found
        scores = self.store.scores("reports", query)
        weighted = {
            key: s * (self.get(key).weight if "/" in key else 1.0) for key, s in scores.items() if key not in skip
        }
        return sorted(weighted, key=lambda key: -weighted[key])[: len(found)]

    def get(self, node: str) -> Report:
        data = json.loads(self.store.value("reports", node))
        for key in ("parents", "components", "limitations", "ideas", "novel", "directions"):
            data[key] = tuple(data.get(key, ()))
        return Report(**data)

    def all(self) -> list[Report]:
        return [self.get(key) for key in self.store.keys("reports")]


def is_reported(node: Node) -> bool:
    return node.finished and node.op not in _NOT_REPORTED
