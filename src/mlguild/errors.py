"""Errors a user sees, and exceptions the loop uses for control flow.

Every user-facing error says what went wrong *and* the command (or edit) that fixes it,
so a person reading a terminal at 3 a.m. knows what to do next.
"""

from __future__ import annotations


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


class TaskError(MlguildError):
    """A task folder or task source is malformed."""


class ConfigError(MlguildError):
    """A configuration value is missing, unknown or invalid."""


class RunError(MlguildError):
    """A run directory is missing, locked or unusable."""


class JournalCorrupt(MlguildError):
    """A journal line in the middle of the file is not valid JSON (not a torn tail)."""


class FirewallError(MlguildError):
    """The workspace could not be built, or the verifier found sealed data in it."""


class BrainBroken(MlguildError):
    """The brain keeps producing no code: continuing would only spend budget."""


class NothingLearnable(MlguildError):
    """No model beat a constant prediction on the holdout: the run's submission is no model."""


class SubmissionError(MlguildError):
    """A submission file is invalid. ``reason`` is a short stable code (e.g. ``bad_header``)."""

    def __init__(self, reason: str, message: str, fix: str | None = None):
        super().__init__(message, fix)
        self.reason = reason


class ScorerIntegrityError(MlguildError):
    """The scorer's own files changed since the run started."""


# --- loop control: these are not errors, they carry what happened ---


class BudgetExhausted(Exception):
    """A run budget (time, iterations) is spent; the loop stops cleanly."""

    def __init__(self, which: str):
        super().__init__(which)
        self.which = which
