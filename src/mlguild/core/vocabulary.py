"""The words a node is described with (its operation, its status, the ways it can fail) and
the kinds of record the journal holds (``Event``).

Named once here, as StrEnums: the graph, the policies, the executor, the loop, the brains
and the final stage all speak them, and the journal stores them as their plain strings
(a member is a ``str``, so a record written before this module existed reads back equal).
"""

from __future__ import annotations

from enum import StrEnum


class Op(StrEnum):
    """What a node does."""

    EDA = "eda"  # an exploratory script before the first draft: findings for the brief, no score
    DRAFT = "draft"
    IMPROVE = "improve"
    DEBUG = "debug"
    EVOLVE = "evolve"  # a stagnant branch's next direction, from its whole trajectory
    FUSE = "fuse"  # one script combining a node with the best ideas of other branches
    BLEND = "blend"  # a weighted average of several nodes' predictions (mlguild.brains.recipes.fuse)
    RERUN = "rerun"  # a candidate's script again with another seed: evidence, not a new idea
    GROW = "grow"  # a node's script again on a larger sample of the training rows (successive halving)
    REFIT = "refit"  # a final refit on all labelled rows (mlguild.final.stage): not a search node


class Status(StrEnum):
    """How a node stands when it did not fail (a failed node's status is its FailureKind)."""

    PENDING = "pending"  # started, not finished
    SCORED = "scored"  # the harness scored its holdout predictions
    FINAL_OK = "final"  # a refit node that wrote a valid submission (a refit has no score)
    EXPLORED = "explored"  # an exploratory node whose script ran to its end (its findings are in the brief)
    # A step of a community-cycle node's refine loop whose outputs meet the contract, not scored:
    # the harness scores the node's final script once (mlguild.run.fix_loop). Never a node's status.
    CHECKED = "checked"


class FailureKind(StrEnum):
    """The ways a node can end badly; each has a name the next debug step receives. The first
    ones are the brain's and the coder's (no script came of the reply); the rest describe a
    script that was written and run (a sandbox status such as ``disk`` passes through)."""

    BRAIN_ERROR = "brain_error"
    LLM_ERROR = "llm_error"
    TRUNCATED = "truncated"
    NO_CODE = "no_code"
    DIFF_MISMATCH = "diff_mismatch"
    SYNTAX_ERROR = "syntax_error"
    GUARD_REJECTED = "guard_rejected"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    DISK = "disk"
    PROCS = "procs"
    CRASH = "crash"
    MISSING_OUTPUT = "missing_output"
    INVALID_OUTPUT = "invalid_output"
    INTERRUPTED = "interrupted"
    SANDBOX_ERROR = "sandbox_error"
    WORKER_LOST = "worker_lost"  # the machine or Ray worker running its script was lost: not the script's fault
    SCORER_TAMPERED = "scorer_tampered"  # the scorer's files changed while this node's script ran
    DUPLICATE = "duplicate"  # its code is a node's already run or running: not run again (mlguild.run.propose)
    OVER_BUDGET = "over_budget"  # its estimated cost exceeds the time it could have: not started (mlguild.run.gate)


# A truncated node keeps its partial code, so a debug step can complete it; no_code and
# diff_mismatch have nothing to repair (the brain already re-prompted), so they are not here.
DEBUGGABLE = frozenset(
    {
        FailureKind.TRUNCATED,
        FailureKind.SYNTAX_ERROR,
        FailureKind.GUARD_REJECTED,
        FailureKind.TIMEOUT,
        FailureKind.MEMORY,
        FailureKind.DISK,
        FailureKind.PROCS,
        FailureKind.CRASH,
        FailureKind.MISSING_OUTPUT,
        FailureKind.INVALID_OUTPUT,
    }
)
# Failures in which the brain produced no script at all.
NO_CODE = frozenset({FailureKind.BRAIN_ERROR, FailureKind.LLM_ERROR, FailureKind.NO_CODE})
FAILURES = frozenset(FailureKind)  # for membership tests of plain strings read back from the journal

# A node's status: how it stands, or how it failed.
NodeStatus = Status | FailureKind


def node_status(value: str) -> NodeStatus:
    """The member a status read back from the journal (a plain string) names."""
    return Status(value) if value in Status._value2member_map_ else FailureKind(value)


class Event(StrEnum):
    """The kinds of journal record (its ``type``). Each is written by one function of
    mlguild.rundir.records (a node's) or mlguild.rundir.events (the rest); readers compare
    a record's ``type`` with these members."""

    RUN_STARTED = "run_started"  # the run folder was built: its split, floors, scorer fingerprint
    SESSION_STARTED = "session_started"
    SESSION_ENDED = "session_ended"
    NODE_STARTED = "node_started"  # a node's script was written (or a killed node restarted)
    NODE_STEP = "node_step"  # a refine-loop step's script, or a fall back to an earlier step's
    NODE_FINISHED = "node_finished"
    NODE_REPORT = "node_report"  # who wrote a community-cycle node's report
    BEST_CHANGED = "best_changed"
    MOVE_SKIPPED = "move_skipped"  # an op the task does not allow
    REFERENCE_SKIPPED = "reference_skipped"  # a rung of the baseline ladder the task does not allow
    SEED_CHECK_WAIVED = "seed_check_waived"  # a candidate's seed reruns would not fit: it stays behind the best
    WATCHED = "watched"  # the hashes of the files a person may edit, as the harness left them
    INTERVENTION = "intervention"  # a person's touch: a resume, changed settings, an edit, Ctrl-C
    LLM_CALL = "llm_call"
    CONFIRMATION_SCORED = "confirmation_scored"
    FINAL_CHOSEN = "final_chosen"
    FINAL_GRADED = "final_graded"
    KAGGLE_SUBMITTED = "kaggle_submitted"
    KAGGLE_SUBMIT_SKIPPED = "kaggle_submit_skipped"
    KAGGLE_SUBMIT_FAILED = "kaggle_submit_failed"
    KAGGLE_SCORED = "kaggle_scored"
