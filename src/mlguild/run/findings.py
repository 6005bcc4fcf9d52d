"""The exploration's findings, summarised once per run, into the brief.

The exploratory node's output goes into the brief (mlguild.task.brief.add_findings), and the
brief into the stable prefix of every later request, so it is said short, once: before the
node is finished, its brain's model (a ``Summariser``) reads the whole output and writes a
summary, which the brief keeps in the run folder; every later request reads it from there,
the same bytes, a resume included. The request is made outside the session's lock (other
workers go on). A brain with no model, a failed request or a reply that is no summary (the
scripted LLM's scripts) leaves the harness's digest of the output, which ``finish_node``
writes as it always did: the node's findings are never lost.
"""

from __future__ import annotations

from ..core.graph import Node
from ..core.protocols import Context, Summariser
from ..core.vocabulary import Status
from ..rundir.interventions import mark_seen
from ..rundir.records import Outcome
from ..task.brief import add_findings
from ..util.fs import read_text_no_follow
from .session import Session


def summarise_findings(session: Session, node: Node, outcome: Outcome, context: Context | None) -> bool:
    """Ask ``session``'s brain to summarise what the exploratory ``node`` printed and write the
    summary into the brief; False when nothing was written (``finish_node`` then writes the
    harness's digest)."""
    brain = session.brain
    if not isinstance(brain, Summariser) or context is None:
        return False
    output = read_text_no_follow(session.run.node_dir(node.id) / "stdout.txt")
    if not output.strip():
        return False
    failure = "" if outcome.status == Status.EXPLORED else f"{outcome.status}: {outcome.failure or ''}"
    try:
        with session.brain_lock:
            summary = brain.summarise_findings(context, output, failure, node.id)
    except Exception:  # a failed request: the digest serves, and the next proposal meets the error
        return False
    if not summary:
        return False
    with session.lock:
        if not add_findings(session.run.path, node.id, output, failure, summary=summary):
            return False
        mark_seen(session.run)  # the harness's own edit of the brief, not a person's
        session.contexts.brief = None  # the next proposal reads the brief with the findings
    return True
