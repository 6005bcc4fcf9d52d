"""Stage IV of the community cycle inside a node: before the node is finished, its brain's
model writes its report from the harness's numbers (mlguild.brains.llm.report).

Only the cycle's own nodes (meta ``cycle``: its drafts, improves and evolves) get one: the
stage belongs to the cycle, and a run without it pays for no extra request. The request is
made outside the session's lock (other workers go on); the model's report waits in the pools
until ``finish_node`` puts it in the report pool in place of the harness's, and its next
directions into the idea pool. A failed request or an unreadable reply leaves the harness's
report: the node is never lost. Journaled as ``node_report`` before ``node_finished``.
"""

from __future__ import annotations

import dataclasses
import threading

from ..core.graph import Node
from ..core.protocols import Reporter, ReportRequest
from ..pools.reports import is_reported, report_of
from ..rundir.records import Outcome, apply_outcome, record_report
from .session import Session


def ask_report(session: Session, node: Node, outcome: Outcome) -> None:
    """Ask ``session``'s brain (a ``Reporter``) for ``node``'s report, given its ``outcome``
    (not yet recorded), and keep it for ``finish_node``."""
    brain, run = session.brain, session.run
    assert isinstance(brain, Reporter), "only a brain that writes reports is asked for one"
    preview = dataclasses.replace(node)  # the node as it will finish: the graph's own is not touched
    apply_outcome(preview, outcome)
    if not is_reported(preview):
        return
    worker = threading.current_thread().name.removeprefix("mlguild-")
    with session.lock:
        harness = report_of(preview, session.state.graph, worker, session.pools.overlap(preview))
    spec = run.spec
    task = f"{spec.name}: {spec.task_type}, metric {spec.metric}, target {', '.join(spec.target_columns)}"
    request = ReportRequest(node=node.id, task=task, plan=node.plan, harness=harness.harness_text())
    try:
        with session.brain_lock:
            written = brain.write_report(request)
        failure = "" if written is not None else "the model's reply was not a report"
    except Exception as exc:  # a failed request: the harness's report stands
        written, failure = None, f"the request failed: {exc}"
    with session.lock:
        if written is None:
            record_report(run.journal, node.id, "harness", failure=failure[:500])
            return
        session.pools.written[node.id] = written
        record_report(run.journal, node.id, written.model or "model", directions=list(written.directions))
