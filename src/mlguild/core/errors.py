"""Errors a user sees, and exceptions the loop uses for control flow.

Every user-facing error says what went wrong *and* the command (or edit) that fixes it,
so a person reading a terminal at 3 a.m. knows what to do next.
"""

from __future__ import annotations

from .vocabulary import FailureKind


class StopRun(Exception):
    """The run cannot go on (a spent budget, an unusable setup): raised through a step, it
    ends the loop; a spent budget ends it cleanly, anything else reaches the user."""


class ProposalFailed(Exception):
    """One proposal failed (an LLM request, a reply without usable code): its node is
    recorded as failed, and the run goes on."""

    kind = FailureKind.BRAIN_ERROR

    def as_record(self) -> tuple[FailureKind, str, str]:
        """(failure kind, message for the record and the next prompt, code the proposal still
        had, e.g. a truncated reply's, which a debug step can complete)."""
        return self.kind, str(self), ""


class MoveUnavailable(Exception):
    """A move the harness or a brain cannot make for this task (a blend when the task's rows
    cannot be aligned, a recipe for a shape the recipes do not cover). Not a failure of the
    run: the move is skipped with this reason in the journal (``move_skipped``) and the
    search goes on with the moves that remain. ``fix`` says how a user gets the move."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.message, self.fix = message, fix


class MlguildError(Exception):
    """A problem the user can fix. ``fix`` is the command or edit that fixes it."""

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        if self.fix:
            return f"{self.message}\n  fix: {self.fix}"
        return self.message


class TaskError(MlguildError, StopRun):
    """A task folder or task source is malformed."""


class ConfigError(MlguildError, StopRun):
    """A configuration value is missing, unknown or invalid."""


class RunError(MlguildError):
    """A run directory is missing, locked or unusable."""


class JournalCorrupt(MlguildError):
    """A journal line in the middle of the file is not valid JSON (not a torn tail)."""


class FirewallError(MlguildError):
    """The workspace could not be built, or the verifier found sealed data in it."""


class BrainBroken(MlguildError, StopRun):
    """The brain keeps producing no code: continuing would only spend budget."""


class NothingLearnable(MlguildError):
    """No model beat a constant prediction on the holdout: the run's submission is no model."""


class KaggleError(MlguildError):
    """A Kaggle API call failed: bad credentials, an unknown competition, unaccepted rules,
    a rate or daily limit (the message says which, the fix what to do)."""


class SubmissionError(MlguildError):
    """A submission file is invalid. ``reason`` is a short stable code (e.g. ``bad_header``)."""

    def __init__(self, reason: str, message: str, fix: str | None = None):
        super().__init__(message, fix)
        self.reason = reason


class ScorerIntegrityError(MlguildError, StopRun):
    """The scorer's own files changed since the run started."""


# --- loop control: these are not errors, they carry what happened ---


class BudgetExhausted(StopRun):
    """A run budget (time, iterations) is spent; the loop stops cleanly."""

    def __init__(self, which: str):
        super().__init__(which)
        self.which = which
