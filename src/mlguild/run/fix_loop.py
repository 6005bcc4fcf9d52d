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
import time
from pathlib import Path

from ..core.graph import Node
from ..core.protocols import Fixer, FixRequest, Refiner
from ..core.vocabulary import FailureKind, Status
from ..util.fs import atomic_write, read_no_follow, read_text_no_follow, sha256_text
from .budget import MIN_SCRIPT_S
from .executor import OUTPUT_TAIL
from .node import run_step
from .records import Outcome, record_step
from .session import Session

_LOGS = ("solution.py", "stdout.txt", "stderr.txt")


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
            (node_dir / "output").rename(_kept_outputs(node_dir, step))
        step += 1
        outcome = run_step(session, node, step, answer[1], answer[0], remaining, seed, cpus, score=False)
        if outcome.status == Status.CHECKED:
            if working is not None:
                shutil.rmtree(_kept_outputs(node_dir, working[0]), ignore_errors=True)
            working = (step, outcome)
    node.meta["steps"] = step
    record_step(run, node, step, outcome)
    if working is None:
        return outcome
    if working[0] != step:
        _fall_back(session, node, node_dir, working[0], step, outcome)
    return _score_once(session, node, node_dir, working[1])


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


def _kept_outputs(node_dir: Path, step: int) -> Path:
    return node_dir / "steps" / f"{step:02d}" / "output"


def _fall_back(session: Session, node: Node, node_dir: Path, kept: int, last: int, outcome: Outcome) -> None:
    """Make step ``kept``'s script, logs and outputs the node's again, after step ``last``
    (which ended as ``outcome``) did not work: journaled first, as every script of a node is."""
    folder = node_dir / "steps" / f"{kept:02d}"
    code = read_text_no_follow(folder / "solution.py")
    why = f"step {last} ended as {outcome.status}: the node keeps step {kept}'s script"
    with session.lock:
        node.code_sha256 = sha256_text(code)
        session.run.journal.append(
            "node_step", id=node.id, step=kept, restored=True, fix=why, code_sha256=node.code_sha256
        )
    for name in _LOGS:
        atomic_write(node_dir / name, read_no_follow(folder / name))
    shutil.rmtree(node_dir / "output", ignore_errors=True)
    (folder / "output").rename(node_dir / "output")
    node.meta["final_step"] = kept


def _score_once(session: Session, node: Node, node_dir: Path, checked: Outcome) -> Outcome:
    """The node's final script's outputs scored on the sealed holdout: the only score the
    loop asks for. What it ran (time, printed score, sandbox) is the checked step's."""
    started = time.monotonic()
    final = session.executor.judge_outputs(node_dir / "output", node.is_blend)
    final.printed_score, final.exec = checked.printed_score, checked.exec
    harness_s = checked.timing.get("harness_s", 0.0) + time.monotonic() - started
    final.timing = {**checked.timing, "harness_s": round(harness_s, 4)}
    return final
