"""Replay: rebuild the whole state of a run from its journal.

The journal is the source of truth; the graph, the best node, the budget spent and the
final grade are all derived from it, so a run killed at any point can be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Event, Status
from ..metrics import Direction
from .records import apply_finished, node_from_started


@dataclass
class RunState:
    graph: SearchGraph
    best_id: str | None = None
    spent_s: float = 0.0  # active wall time over all sessions
    sessions: int = 0
    final_grade: dict[str, Any] | None = None
    final_choice: dict[str, Any] | None = None  # which node's submission is final (mlguild.run.refit)
    confirmation: dict[str, Any] | None = None  # nodes scored once on the confirmation split (mlguild.final.confirm)
    scorer_fingerprint: str | None = None  # taken when the run was created
    finished_reason: str | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    """Ops the harness found it cannot make for this task (``move_skipped``), with the reason."""
    _session_elapsed: float = field(default=0.0, repr=False)

    @property
    def iterations(self) -> int:
        return len(self.graph)

    def unfinished(self) -> list[Node]:
        return [n for n in self.graph if n.status == Status.PENDING]


def replay(records: list[dict[str, Any]], direction: Direction) -> RunState:
    state = RunState(SearchGraph(direction))
    graph = state.graph
    for rec in records:
        kind = rec["type"]
        if kind == Event.SESSION_STARTED:
            state.spent_s += state._session_elapsed
            state._session_elapsed = 0.0
            state.sessions += 1
        elif kind == Event.NODE_STARTED:
            data = rec["node"]
            if data["id"] in graph.nodes:  # a resumed restart of an unfinished node
                graph[data["id"]].attempts += 1
            else:
                graph.add(node_from_started(data))
        elif kind == Event.NODE_STEP:  # a fix inside the node (mlguild.brains.llm.cycle): its script now
            graph[rec["id"]].code_sha256 = rec["code_sha256"]
        elif kind == Event.NODE_FINISHED:
            apply_finished(graph[rec["id"]], rec)
        elif kind == Event.RUN_STARTED:
            state.scorer_fingerprint = rec.get("scorer_sha256")
        elif kind == Event.BEST_CHANGED:
            state.best_id = rec["id"]
        elif kind == Event.FINAL_CHOSEN:
            state.final_choice = {
                k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type", "session_elapsed_s")
            }
        elif kind == Event.CONFIRMATION_SCORED:  # each node's confirmation score, kept from its one scoring
            scores = {**(state.confirmation or {}).get("scores", {}), **rec.get("scores", {})}
            kept = {k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type")}
            state.confirmation = {**kept, "scores": scores}
        elif kind == Event.FINAL_GRADED:
            state.final_grade = {k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type")}
        elif kind == Event.SEED_CHECK_WAIVED:  # mlguild.run.gate: the candidate stays behind the best
            graph.waived.add(rec["candidate"])
        elif kind == Event.MOVE_SKIPPED:
            state.unavailable.setdefault(rec["op"], rec["reason"])
        elif kind == Event.SESSION_ENDED:
            state.finished_reason = rec.get("reason")
        if "session_elapsed_s" in rec:
            state._session_elapsed = max(state._session_elapsed, float(rec["session_elapsed_s"]))
    state.spent_s += state._session_elapsed
    state._session_elapsed = 0.0
    graph.order_by_id()
    return state
