"""Whether a run can still do useful work: a run whose brain produces no code, or whose
nodes all fail in exactly the same way (a broken environment, not a bad idea), is stopped
with the cause and what a user can do about it, instead of burning its budget; so is a
search that has converged, when the run asks for that (``search.stop_on_convergence``)."""

from __future__ import annotations

from ..coder.diagnose import Diagnosis, diagnose
from ..core.errors import BrainBroken, BudgetExhausted
from ..core.protocols import LAST_RESORT, HasLastResort
from ..core.vocabulary import NO_CODE
from ..rundir.folder import RunDir
from ..search.evidence import converged
from .session import Session


def check_after_node(session: Session) -> None:
    """After each node, holding the session's lock: raise BrainBroken for a broken brain
    (``check_brain_health``), BudgetExhausted("converged") for a converged search."""
    with session.lock:
        check_brain_health(session)
        if session.run.config.search.stop_on_convergence:
            why = converged(session.state.graph, session.run.config.search)
            if why is not None:
                session.on_event("warning", {"message": f"converged: {why}"})
                raise BudgetExhausted("converged")


def check_brain_health(session: Session) -> None:
    """Raise BrainBroken when the last ``search.max_same_failures`` nodes produced no code,
    or all failed the same way (the brain's safest pipeline included, when it has one)."""
    run, graph = session.run, session.state.graph
    limit = run.config.search.max_same_failures
    recent = list(graph)[-limit:]
    if len(recent) < limit or any(n.ok for n in recent):
        return
    fix = f"see `mlguild show {recent[-1].id} --run {run.path}`"
    if all(n.status in NO_CODE for n in recent):
        raise BrainBroken(
            f"the last {limit} proposals produced no code (last: {recent[-1].failure})",
            f"{fix}; check the model and its settings",
        )
    columns = [c.name for c in run.profile.columns]
    causes = {n.id: diagnose(n.failure or "", session.code(n), columns) for n in recent}
    if len({(n.status, causes[n.id].signature()) for n in recent}) > 1:
        return
    # The brain's safest pipeline gets its chance first: a repair may still get past this.
    last_resort_tried = any(n.meta.get(LAST_RESORT) for n in recent)
    if isinstance(session.brain, HasLastResort) and not last_resort_tried:
        return
    cause = causes[recent[-1].id]
    raise BrainBroken(
        f"the last {limit} nodes all failed the same way"
        f"{', the safest pipeline included' if last_resort_tried else ''}: "
        f"{recent[-1].status}, {cause.summary()}",
        _fix_for(cause, run, fix),
    )


def _fix_for(cause: Diagnosis, run: RunDir, see: str) -> str:
    """What a user can do when every node fails the same way: fix the data the failure names,
    or look at the failing node."""
    if cause.column is not None:
        return (
            f"{see}; the column {cause.column!r} cannot be used as it is: fix or remove it in the task's "
            f"train and test files, then start a new run with `mlguild run`"
        )
    if cause.step:
        return f"{see}; the script fails in its {cause.step!r} step every time: check the data that step reads"
    return f"{see}; every script fails this way, so check the task's data and this machine's Python packages"
