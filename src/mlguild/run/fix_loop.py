"""The community cycle's run-observe-fix loop inside one node (stage III of
mlguild.brains.llm.cycle): while the node's script fails, the brain (a ``Fixer``) fixes it
from what it printed, and the fixed script runs again in the node (``mlguild.run.node.run_step``)."""

from __future__ import annotations

from ..core.graph import Node
from ..core.protocols import Fixer, FixRequest
from ..core.vocabulary import FailureKind, Status
from ..util.fs import read_text_no_follow
from .budget import MIN_SCRIPT_S
from .node import run_step
from .records import Outcome, record_step
from .session import Session


def fix_loop(
    session: Session, node: Node, outcome: Outcome, deadline: float, seed: int, cpus: tuple[int, ...] | None
) -> Outcome:
    """While ``node``'s script fails, the session's brain fixes it from what it did, up to
    ``brain.cycle_steps`` runs in all and within the node's own time limit (``deadline``,
    on the session clock). Every step's script, output and outcome is kept under
    ``steps/NN/`` and journaled; the node ends with the last step's outcome."""
    brain, run = session.brain, session.run
    assert isinstance(brain, Fixer), "the loop runs a fix loop only for a brain that fixes"
    limit, step = run.config.brain.cycle_steps, 1
    while outcome.status not in (Status.SCORED, FailureKind.SCORER_TAMPERED) and step < limit:
        remaining = deadline - session.clock.elapsed()
        budget_left = session.clock.remaining_s()
        if budget_left is not None:
            remaining = min(remaining, budget_left)
        if remaining < MIN_SCRIPT_S or session.interrupted.is_set():
            break
        node_dir = run.node_dir(node.id)
        record_step(run, node, step, outcome)
        request = FixRequest(
            plan=node.plan,
            code=read_text_no_follow(node_dir / "solution.py"),
            status=outcome.status,
            failure=outcome.failure or "",
            stderr=read_text_no_follow(node_dir / "stderr.txt")[-3000:],
            step=step,
            timeout_s=remaining,
            node=node.id,
        )
        try:
            with session.brain_lock:
                why, fixed = brain.fix_step(request)
        except Exception as exc:  # a failed request ends the loop; the node keeps its last outcome
            outcome.failure = f"{outcome.failure or ''}\n(the fix of step {step} failed: {exc})".strip()
            break
        step += 1
        outcome = run_step(session, node, step, fixed, why, remaining, seed, cpus)
    node.meta["steps"] = step
    record_step(run, node, step, outcome)
    return outcome
