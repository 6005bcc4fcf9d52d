"""The community cycle's write-run-observe-refine loop inside one node (stage III of
mlguild.brains.llm.cycle).

After a step that failed, the brain (a ``Fixer``) repairs the script from what it printed.
After a step that worked, a ``Refiner`` reads the script's own validation output (the score
it printed, the ends of its stdout and stderr: untrusted, shown to the model and used for
nothing else) and improves it, or answers that it is done. Every step runs checked, never
scored: the sealed holdout is not the loop's signal. When the loop ends, the node's script is
the last step that worked (a later step that failed falls back to it, its outputs restored)
and the harness scores it on the holdout once. Every step's script, output and outcome is
kept under ``steps/NN/`` and journaled (``node_step``; a fallback is one with ``restored``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..core.graph import Node
from ..core.protocols import Fixer, FixRequest, Refiner
from ..core.vocabulary import FailureKind, Status
from ..rundir.records import Outcome, record_step
from ..util.fs import read_text_no_follow
from .budget import MIN_SCRIPT_S
from .executor import OUTPUT_TAIL
from .node import fall_back, run_step
from .session import Session
from .steps import kept_outputs, score_once


def fix_loop(
    session: Session, node: Node, outcome: Outcome, deadline: float, seed: int, cpus: tuple[int, ...] | None
) -> Outcome:
    """Repair or refine ``node``'s script, step by step, up to ``brain.cycle_steps`` runs in all
    and within the node's own time limit (``deadline``, on the session clock); ``outcome`` is
    its first run's, checked and not scored. Returns the node's outcome: its final script
    scored once on the holdout, or the last step's failure when no step worked."""
    brain, run = session.brain, session.run
    assert isinstance(brain, Fixer), "the loop runs a fix loop only for a brain that fixes"
    node_dir = run.node_dir(node.id)
    limit, step = run.config.brain.cycle_steps, 1
    working = (step, outcome) if outcome.status == Status.CHECKED else None  # the last step that worked
    trail: list[str] = []
    while step < limit and outcome.status != FailureKind.SCORER_TAMPERED:
        remaining = deadline - session.clock.elapsed()
        budget_left = session.clock.remaining_s()
        if budget_left is not None:
            remaining = min(remaining, budget_left)
        if remaining < MIN_SCRIPT_S or session.interrupted.is_set():
            break
        worked = outcome.status == Status.CHECKED
        if worked and not isinstance(brain, Refiner):  # a brain that only repairs stops at a working script
            break
        record_step(run, node, step, outcome)
        request = _request(node, node_dir, step, outcome, remaining, trail)
        trail.append(_trail_line(step, outcome))
        try:
            with session.brain_lock:
                answer = (
                    brain.refine_step(request) if isinstance(brain, Refiner) and worked else brain.fix_step(request)
                )
        except Exception as exc:  # a failed request ends the loop; the node keeps its last working script
            note = f"(the {'refinement' if worked else 'fix'} of step {step} failed: {exc})"
            if worked:
                node.meta["refine_stopped"] = note
            else:
                outcome.failure = f"{outcome.failure or ''}\n{note}".strip()
            break
        if answer is None:  # the model judges the working script done
            node.meta["refine_stopped"] = f"the model judged step {step}'s script done"
            break
        if worked:  # its outputs are the node's should the refinement fail
            (node_dir / "output").rename(kept_outputs(node_dir, step))
        step += 1
        outcome = run_step(session, node, step, answer[1], answer[0], remaining, seed, cpus, score=False)
        if outcome.status == Status.CHECKED:
            if working is not None:
                shutil.rmtree(kept_outputs(node_dir, working[0]), ignore_errors=True)
            working = (step, outcome)
    node.meta["steps"] = step
    record_step(run, node, step, outcome)
    if working is None:
        return outcome
    if working[0] != step:
        fall_back(session, node, node_dir, working[0], step, outcome)
    return score_once(session, node, node_dir, working[1])


def _request(node: Node, node_dir: Path, step: int, outcome: Outcome, remaining: float, trail: list[str]) -> FixRequest:
    """What the brain is told about the step that just ran: for a step that worked, what the
    script printed (its own validation); for one that failed, the failure."""
    worked = outcome.status == Status.CHECKED
    return FixRequest(
        plan=node.plan,
        code=read_text_no_follow(node_dir / "solution.py"),
        status=outcome.status,
        failure=outcome.failure or "",
        stderr=read_text_no_follow(node_dir / "stderr.txt")[-OUTPUT_TAIL:],
        step=step,
        timeout_s=remaining,
        node=node.id,
        stdout=read_text_no_follow(node_dir / "stdout.txt")[-OUTPUT_TAIL:] if worked else "",
        printed_score=outcome.printed_score if worked else None,
        trail=tuple(trail),
    )


def _trail_line(step: int, outcome: Outcome) -> str:
    """One line of the node's steps for the model: how the step ended, and what a working
    step printed as its validation score (its own claim)."""
    seconds = f" in {outcome.timing['exec_s']:.0f} s" if outcome.timing.get("exec_s") is not None else ""
    if outcome.status != Status.CHECKED:
        last = ((outcome.failure or "").strip().splitlines() or [""])[-1][:160]
        return f"step {step}: {outcome.status}{seconds}{': ' + last if last else ''}"
    printed = f", printed validation score {outcome.printed_score:g}" if outcome.printed_score is not None else ""
    return f"step {step}: ran{seconds}{printed}"
