"""The steps a refine loop's node keeps on disk (mlguild.run.fix_loop), so that a resume
honours the loop's rule too (mlguild.run.node.settle_resumed).

Before a working step is refined, its outputs move to ``steps/NN/output``: they wait there,
with the step's script and logs (``steps/NN/``), until a later step works too. A node whose
last step did not work falls back to that step (mlguild.run.node.fall_back: its script, logs
and outputs are the node's again, journaled as a ``node_step`` with ``restored``), and the
node's final script is scored on the sealed holdout once (``score_once``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..core.graph import Node
from ..core.vocabulary import Status
from ..rundir.records import Outcome
from ..util.fs import read_text_no_follow
from .executor import parse_printed_score
from .session import Session


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


def score_once(session: Session, node: Node, node_dir: Path, checked: Outcome) -> Outcome:
    """The node's final script's outputs scored on the sealed holdout: the only score the
    loop asks for. What it ran (time, printed score, sandbox) is the checked step's."""
    started = time.monotonic()
    final = session.executor.judge_outputs(node_dir / "output", node.is_blend)
    final.printed_score, final.exec = checked.printed_score, checked.exec
    harness_s = checked.timing.get("harness_s", 0.0) + time.monotonic() - started
    final.timing = {**checked.timing, "harness_s": round(harness_s, 4)}
    return final


def kept_outcome(folder: Path) -> Outcome:
    """What step ``folder`` did when it ran, as its ``outcome.json`` and stdout keep it."""
    ran = json.loads(read_text_no_follow(folder / "outcome.json"))
    timing = {"exec_s": ran["exec_s"]} if ran.get("exec_s") is not None else {}
    printed = parse_printed_score(read_text_no_follow(folder / "stdout.txt"))
    return Outcome(Status.CHECKED, printed_score=printed, timing=timing)
