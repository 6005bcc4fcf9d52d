"""The community cycle's run-observe-fix loop inside one node (stage III of
mlguild.brains.llm.cycle), driven by the agent: while the node's script fails, the brain fixes it
from what it printed, and the fixed script runs again in the node."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..core.graph import Node
from ..core.vocabulary import SCORED, TAMPERED
from ..util.fs import read_text_no_follow, sha256_text
from .executor import Outcome
from .records import record_step

if TYPE_CHECKING:
    from .loop import Agent

MIN_SCRIPT_S = 5.0  # below this much time left, a script (a node, a fix step) cannot do useful work


def fix_loop(
    agent: Agent, node: Node, outcome: Outcome, deadline: float, seed: int, cpus: tuple[int, ...] | None
) -> Outcome:
    """The community cycle's run-observe-fix loop inside one node: while its script fails,
    the brain fixes it from what it did, up to ``brain.cycle_steps`` runs in all and
    within the node's own time limit. Every step's script, output and outcome is kept
    under ``steps/NN/`` and journaled; the node ends with the last step's outcome."""
    limit, step = agent.run.config.brain.cycle_steps, 1
    while outcome.status != SCORED and outcome.status != TAMPERED and step < limit:
        remaining = deadline - time.monotonic()
        budget_left = agent.remaining_s()
        if budget_left is not None:
            remaining = min(remaining, budget_left)
        if remaining < MIN_SCRIPT_S or agent.interrupted.is_set():
            break
        code = read_text_no_follow(agent.run.node_dir(node.id) / "solution.py")
        record_step(agent.run, node, step, outcome)
        stderr = read_text_no_follow(agent.run.node_dir(node.id) / "stderr.txt")[-3000:]
        try:
            with agent._brain_lock:
                why, fixed = agent.brain.fix_step(  # type: ignore[attr-defined]
                    node.plan, code, outcome.status, outcome.failure or "", stderr, step, remaining, node.id
                )
        except Exception as exc:  # a failed request ends the loop; the node keeps its last outcome
            outcome.failure = f"{outcome.failure or ''}\n(the fix of step {step} failed: {exc})".strip()
            break
        step += 1
        with agent.lock:
            node.code_sha256 = sha256_text(fixed)
            agent.runner.write_proposal(node, node.plan, fixed, node.meta)
            agent.run.journal.append(
                "node_step", id=node.id, step=step, fix=why.strip()[:500], code_sha256=node.code_sha256
            )
        outcome = agent.runner.execute(node, remaining, seed=seed, cpus=cpus)
    node.meta["steps"] = step
    record_step(agent.run, node, step, outcome)
    return outcome
