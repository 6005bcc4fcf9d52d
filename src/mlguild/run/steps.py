"""The rule a refine loop's node ends by (mlguild.run.fix_loop), kept on disk so that a resume
honours it too (mlguild.run.node.resume_interrupted).

Before a working step is refined, its outputs move to ``steps/NN/output``: they wait there,
with the step's script and logs (``steps/NN/``), until a later step works too. A node whose
last step did not work falls back to that step (its script, logs and outputs are the node's
again, journaled as a ``node_step`` with ``restored``), and the node's final script is scored
on the sealed holdout once.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from ..core.graph import Node
from ..core.vocabulary import Status
from ..rundir.records import Outcome, record_step
from ..util.fs import atomic_write, read_no_follow, read_text_no_follow, sha256_text
from .executor import parse_printed_score
from .session import Session

_LOGS = ("solution.py", "stdout.txt", "stderr.txt")


def kept_outputs(node_dir: Path, step: int) -> Path:
    """Where step ``step``'s outputs wait while a refinement of it runs."""
    return node_dir / "steps" / f"{step:02d}" / "output"


def kept_step(node_dir: Path) -> int | None:
    """The working step whose outputs wait for a refinement of it, or None (no refinement was
    under way: the node's outputs are its script's own)."""
    steps = node_dir / "steps"
    if not steps.is_dir():
        return None
    return max((int(p.name) for p in steps.iterdir() if p.name.isdigit() and (p / "output").is_dir()), default=None)


def fall_back(session: Session, node: Node, node_dir: Path, kept: int, last: int, outcome: Outcome) -> None:
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


def score_once(session: Session, node: Node, node_dir: Path, checked: Outcome) -> Outcome:
    """The node's final script's outputs scored on the sealed holdout: the only score the
    loop asks for. What it ran (time, printed score, sandbox) is the checked step's."""
    started = time.monotonic()
    final = session.executor.judge_outputs(node_dir / "output", node.is_blend)
    final.printed_score, final.exec = checked.printed_score, checked.exec
    harness_s = checked.timing.get("harness_s", 0.0) + time.monotonic() - started
    final.timing = {**checked.timing, "harness_s": round(harness_s, 4)}
    return final


def settle_resumed(session: Session, node: Node, kept: int, outcome: Outcome) -> Outcome:
    """The outcome of a node a kill interrupted while it refined working step ``kept``, given
    what its interrupted step did when run again (``outcome``: checked, not scored). As in the
    loop: a step that worked is the node's; one that did not falls back to step ``kept``. The
    node's final script is scored once."""
    node_dir = session.run.node_dir(node.id)
    journaled = [r["step"] for r in session.run.journal.records if r["type"] == "node_step" and r["id"] == node.id]
    last = journaled[-1] if journaled else 1  # the step the kill interrupted
    node.meta["steps"] = last
    if outcome.status == Status.CHECKED:
        record_step(session.run, node, last, outcome)
        shutil.rmtree(kept_outputs(node_dir, kept), ignore_errors=True)
        return score_once(session, node, node_dir, outcome)
    if last != kept:  # the step as it ended (a kill before its record leaves ``kept``'s own)
        record_step(session.run, node, last, outcome)
    fall_back(session, node, node_dir, kept, last, outcome)
    return score_once(session, node, node_dir, _kept_outcome(node_dir / "steps" / f"{kept:02d}"))


def _kept_outcome(folder: Path) -> Outcome:
    """What step ``folder`` did when it ran, as its ``outcome.json`` and stdout keep it."""
    ran = json.loads(read_text_no_follow(folder / "outcome.json"))
    timing = {"exec_s": ran["exec_s"]} if ran.get("exec_s") is not None else {}
    printed = parse_printed_score(read_text_no_follow(folder / "stdout.txt"))
    return Outcome(Status.CHECKED, printed_score=printed, timing=timing)
