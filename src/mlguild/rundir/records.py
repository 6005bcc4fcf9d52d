"""One owner for a node's records: the journal's ``node_started``, ``node_step``,
``node_finished``, ``node_report`` and ``best_changed`` (the run's other events are
mlguild.rundir.events').

Every node (a search node, a restart after a kill, a final refit, a node that tampered
with the scorer) is written by these functions and read back by their inverses, which
``state.replay`` uses: what a record holds and how it maps onto a ``Node`` is said once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.graph import Node
from ..core.titles import title_of
from ..core.vocabulary import Event, NodeStatus, Op, node_status
from ..util.fs import atomic_write, read_no_follow

if TYPE_CHECKING:
    from .folder import RunDir
    from .journal import Journal

FAILURE_KEPT = 2000  # characters of a failure message a record keeps (its end: the traceback's last lines)


@dataclass
class Outcome:
    """What executing a node produced; becomes the node_finished journal record."""

    status: NodeStatus
    score: float | None = None
    failure: str | None = None
    printed_score: float | None = None
    oof_score: float | None = None  # the harness's score of output/oof.csv on the training labels
    holdout_score: float | None = None  # the holdout alone, when ``score`` is the pooled score (small holdouts)
    pooled_spread: float | None = None  # the pooled score's bootstrap spread over its rows
    flags: list[str] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    exec: dict = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)  # optional outputs written, e.g. "oof"


def record_started(
    journal: Journal,
    node: Node,
    reason: str = "",
    elapsed_s: float | None = None,
    worker: int | None = None,
    recall: list[str] | None = None,
) -> None:
    """Journal that ``node`` (its plan, meta and code hash already set) is about to run;
    ``worker`` ran it and ``recall`` are the memory records its brain was shown (for the views).
    A node without a title gets its plan's (mlguild.core.titles)."""
    node.title = node.title or title_of(node.plan)
    data = {
        "id": node.id,
        "op": node.op,
        "parents": list(node.parents),
        "iteration": node.iteration,
        "title": node.title,
        "plan": node.plan,
        "meta": node.meta,
        "code_sha256": node.code_sha256,
        "reason": reason,
    }
    if worker is not None:
        data["worker"] = worker
    if recall:
        data["recall"] = recall
    journal.append(Event.NODE_STARTED, node=data, **_clock(elapsed_s))


def record_step(run: RunDir, node: Node, step: int, outcome: Outcome) -> None:
    """Keep one step of a node's write-run-observe-refine loop (mlguild.run.fix_loop) as it ran:
    ``steps/NN/`` holds its script, its output and its outcome."""
    node_dir = run.node_dir(node.id)
    folder = node_dir / "steps" / f"{step:02d}"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("solution.py", "stdout.txt", "stderr.txt"):
        atomic_write(folder / name, read_no_follow(node_dir / name))
    summary = {"step": step, "status": outcome.status, "score": outcome.score, "failure": outcome.failure}
    atomic_write(folder / "outcome.json", json.dumps({**summary, "exec_s": outcome.timing.get("exec_s")}, indent=2))


def record_restarted(journal: Journal, node: Node, elapsed_s: float | None = None) -> None:
    """Journal a second attempt at a node a kill interrupted (its first record holds the rest)."""
    node.attempts += 1
    data = {"id": node.id, "op": node.op, "parents": list(node.parents), "iteration": node.iteration, "restart": True}
    journal.append(Event.NODE_STARTED, node=data, **_clock(elapsed_s))


def record_step_script(journal: Journal, node: Node, step: int, fix: str, restored: bool = False) -> None:
    """Journal the node's script (its hash already set) as step ``step`` of its refine loop, before
    it runs; ``restored``: a fall back to an earlier step's script, which is not run again."""
    more = {"restored": True} if restored else {}
    journal.append(Event.NODE_STEP, id=node.id, step=step, **more, fix=fix, code_sha256=node.code_sha256)


def record_report(
    journal: Journal, node_id: str, author: str, failure: str | None = None, directions: list[str] | None = None
) -> None:
    """Journal who wrote a community-cycle node's report: the model, or the harness (and why)."""
    written = {"failure": failure} if failure is not None else {"directions": directions or []}
    journal.append(Event.NODE_REPORT, id=node_id, author=author, **written)


def record_best(journal: Journal, node: Node, elapsed_s: float) -> None:
    """Journal that ``node`` is the run's best, once best/ holds it."""
    journal.append(Event.BEST_CHANGED, id=node.id, score=node.score, **_clock(elapsed_s))


def apply_outcome(node: Node, outcome: Outcome) -> None:
    """Set ``node``'s outcome fields from ``outcome`` (``record_finished`` does it too)."""
    node.status, node.score, node.failure = outcome.status, outcome.score, outcome.failure
    node.printed_score, node.timing, node.flags = outcome.printed_score, outcome.timing, outcome.flags
    node.outputs, node.oof_score = outcome.outputs, outcome.oof_score
    node.holdout_score, node.pooled_spread = outcome.holdout_score, outcome.pooled_spread


def record_finished(journal: Journal, node: Node, outcome: Outcome, elapsed_s: float | None = None) -> None:
    """Set ``node``'s outcome fields from ``outcome`` and journal them."""
    apply_outcome(node, outcome)
    journal.append(
        Event.NODE_FINISHED,
        id=node.id,
        status=node.status,
        score=node.score,
        failure=(node.failure or "")[-FAILURE_KEPT:] or None,
        printed_score=node.printed_score,
        **({"oof_score": node.oof_score} if node.oof_score is not None else {}),
        **(
            {"holdout_score": node.holdout_score, "score_kind": "pooled", "pooled_spread": node.pooled_spread}
            if node.holdout_score is not None
            else {}
        ),
        flags=node.flags,
        outputs=node.outputs,
        timing=outcome.timing,
        exec=outcome.exec,
        **_clock(elapsed_s),
    )


def record_seed_check_waived(
    journal: Journal, candidate: str, best: str | None, reason: str, elapsed_s: float | None = None
) -> None:
    """Journal that ``candidate``'s seed check (its re-runs with other seeds) is not made, and
    why (mlguild.run.gate): it stays behind ``best``, and no re-run of it is asked for again."""
    journal.append(Event.SEED_CHECK_WAIVED, candidate=candidate, best=best, reason=reason, **_clock(elapsed_s))


def node_from_started(data: dict[str, Any]) -> Node:
    """The node a first ``node_started`` record describes (the inverse of ``record_started``)."""
    node = Node(
        id=data["id"],
        op=Op(data["op"]),
        parents=tuple(data["parents"]),
        iteration=data["iteration"],
        plan=data.get("plan", ""),
        meta=data.get("meta", {}),
        title=data.get("title") or title_of(data.get("plan", "")),  # runs from before titles: from the plan
    )
    node.attempts = 1
    node.code_sha256 = data.get("code_sha256", "")
    return node


def apply_finished(node: Node, record: dict[str, Any]) -> None:
    """Set ``node``'s outcome fields from a ``node_finished`` record (the inverse of ``record_finished``)."""
    node.status = node_status(record["status"])
    node.score = record.get("score")
    node.failure = record.get("failure")
    node.printed_score = record.get("printed_score")
    node.oof_score = record.get("oof_score")
    node.holdout_score, node.pooled_spread = record.get("holdout_score"), record.get("pooled_spread")
    node.flags = record.get("flags", [])
    node.timing = record.get("timing", {})
    node.outputs = record.get("outputs", [])


def _clock(elapsed_s: float | None) -> dict[str, float]:
    """The session clock field, when the caller keeps one (replay adds it to the time spent)."""
    return {} if elapsed_s is None else {"session_elapsed_s": round(elapsed_s, 3)}
