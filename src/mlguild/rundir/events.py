"""One writer per journal event that is not a node's own (those are mlguild.rundir.records'):
the run's and its sessions', the search's skips and interventions, the LLM's calls, the final
stage's and Kaggle's. Each names its event once (``core.vocabulary.Event``) and the fields
its record holds; the readers (``rundir.replay``, the views) compare ``type`` with the same member.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.vocabulary import Event

if TYPE_CHECKING:
    from .journal import Journal


def _clock(elapsed_s: float | None) -> dict[str, float]:
    """The session clock field, when the caller keeps one (replay adds it to the time spent)."""
    return {} if elapsed_s is None else {"session_elapsed_s": round(elapsed_s, 3)}


def run_started(journal: Journal, **fields: Any) -> None:
    """The run folder was built (mlguild.rundir.folder.create_run): its id, task, split and floors."""
    journal.append(Event.RUN_STARTED, **fields)


def session_started(journal: Journal, resumed: bool, fingerprint: dict[str, str]) -> None:
    journal.append(Event.SESSION_STARTED, resumed=resumed, fingerprint=fingerprint, session_elapsed_s=0.0)


def session_ended(journal: Journal, reason: str, fingerprint: dict[str, str], elapsed_s: float) -> None:
    journal.append(Event.SESSION_ENDED, reason=reason, fingerprint=fingerprint, **_clock(elapsed_s))


def move_skipped(journal: Journal, op: str, parents: list[str], reason: str, fix: str, elapsed_s: float) -> None:
    """An op the task does not allow (replay keeps it in ``RunState.unavailable``)."""
    journal.append(Event.MOVE_SKIPPED, op=op, parents=parents, reason=reason, fix=fix, **_clock(elapsed_s))


def reference_skipped(journal: Journal, rung: str, reason: str, fix: str, elapsed_s: float) -> None:
    """A rung of the baseline ladder the task does not allow (mlguild.run.references)."""
    journal.append(Event.REFERENCE_SKIPPED, rung=rung, reason=reason, fix=fix, **_clock(elapsed_s))


def watched(journal: Journal, fingerprint: dict[str, str]) -> None:
    """The files a person may edit, as the harness leaves them (mlguild.rundir.interventions)."""
    journal.append(Event.WATCHED, fingerprint=fingerprint)


def intervention(journal: Journal, kind: str, what: str, elapsed_s: float | None = None, **more: Any) -> None:
    """A person's touch: ``kind`` (resume, settings, edited, interrupt), ``what`` in words."""
    journal.append(Event.INTERVENTION, kind=kind, what=what, **more, **_clock(elapsed_s))


def llm_call(journal: Journal, record: dict[str, Any]) -> None:
    """One LLM request, as the ledger counted it (the ledger's sink: mlguild.llm.ledger)."""
    journal.append(Event.LLM_CALL, **record)


def confirmation_scored(journal: Journal, record: dict[str, Any]) -> None:
    """Nodes scored once on the confirmation split (mlguild.final.confirm)."""
    journal.append(Event.CONFIRMATION_SCORED, **record)


def final_chosen(journal: Journal, record: dict[str, Any], elapsed_s: float) -> None:
    """Which node's submission is final and why (mlguild.final.stage)."""
    journal.append(Event.FINAL_CHOSEN, **record, **_clock(elapsed_s))


def final_graded(journal: Journal, record: dict[str, Any]) -> None:
    """The once-only test grade (mlguild.final.grade)."""
    journal.append(Event.FINAL_GRADED, **record)


def kaggle_submitted(journal: Journal, node: str, ref: int | None, sha256: str, message: str) -> None:
    journal.append(Event.KAGGLE_SUBMITTED, node=node, ref=ref, sha256=sha256, message=message)


def kaggle_submit_skipped(journal: Journal, node: str, reason: str) -> None:
    journal.append(Event.KAGGLE_SUBMIT_SKIPPED, node=node, reason=reason)


def kaggle_submit_failed(journal: Journal, node: str, error: str) -> None:
    journal.append(Event.KAGGLE_SUBMIT_FAILED, node=node, error=error)


def kaggle_scored(journal: Journal, node: str, ref: int, public_score: float | None, error: str | None = None) -> None:
    """A submission's public score (None, with Kaggle's ``error``, when it could not be scored)."""
    failed = {"error": error} if public_score is None else {}
    journal.append(Event.KAGGLE_SCORED, node=node, ref=ref, public_score=public_score, **failed)
