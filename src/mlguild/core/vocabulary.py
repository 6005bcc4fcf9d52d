"""The words a node is described with: its operation, its status, the ways it can fail.

Named once here; the graph, the policies, the executor, the loop and the final stage all
speak them, and the journal stores them as these strings.
"""

from __future__ import annotations

from typing import Final, Literal

# ---------------------------------------------------------------- operations
Op = Literal["eda", "draft", "improve", "debug", "evolve", "fuse", "blend", "rerun", "refit"]
# Final: each name is its Op literal to the type checker, so Action(DRAFT, ...) checks.
EDA: Final = "eda"  # an exploratory script before the first draft: findings for the brief, no score
DRAFT: Final = "draft"
IMPROVE: Final = "improve"
DEBUG: Final = "debug"
EVOLVE: Final = "evolve"  # a stagnant branch's next direction, from its whole trajectory
FUSE: Final = "fuse"  # one script combining a node with the best ideas of other branches
BLEND: Final = "blend"  # a weighted average of several nodes' predictions (mlguild.brains.recipes.fuse)
RERUN: Final = "rerun"  # a candidate's script again with another seed: evidence, not a new idea
REFIT: Final = "refit"  # a final refit on all labelled rows (mlguild.final.stage): not a search node

# ---------------------------------------------------------------- statuses
PENDING = "pending"  # started, not finished
SCORED = "scored"  # the harness scored its holdout predictions
FINAL_OK = "final"  # a refit node that wrote a valid submission (a refit has no score)
EXPLORED = "explored"  # an exploratory node whose script ran to its end (its findings are in the brief)

# Failure kinds a node can end in; each has a name the next debug step receives.
FAILURES = (
    "brain_error",
    "llm_error",
    "truncated",
    "no_code",
    "diff_mismatch",
    "syntax_error",
    "guard_rejected",
    "timeout",
    "memory",
    "disk",
    "procs",
    "crash",
    "missing_output",
    "invalid_output",
    "interrupted",
    "sandbox_error",
    "scorer_tampered",
)
TAMPERED = "scorer_tampered"  # the scorer's files changed while this node's script ran
# A truncated node keeps its partial code, so a debug step can complete it; no_code and
# diff_mismatch have nothing to repair (the brain already re-prompted), so they are not here.
DEBUGGABLE = frozenset(
    {
        "truncated",
        "syntax_error",
        "guard_rejected",
        "timeout",
        "memory",
        "disk",
        "procs",
        "crash",
        "missing_output",
        "invalid_output",
    }
)
# Failures in which the brain produced no script at all.
NO_CODE = frozenset({"brain_error", "llm_error", "no_code"})
