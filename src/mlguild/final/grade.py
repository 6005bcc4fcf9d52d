"""The once-only grade: the final submission scored on the sealed test answers, exactly once.

The search never sees this number: it is computed after the final stage, from
``final/submission.csv`` (the final stage's choice, see ``mlguild.final.stage``;
``best/submission.csv`` when that stage did not run), recorded in ``audit/final_grade.json``
(created once, never overwritten), in the journal as ``final_graded`` and in
``best/final_grade.json``, and never recomputed: grading the test set repeatedly would turn
it into a second holdout.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from ..core.errors import SubmissionError
from ..rundir import events
from ..rundir.folder import RunDir
from ..rundir.replay import RunState
from ..scoring.scorer import Scorer
from ..util.fs import atomic_write, sha256_file


def audit_path(run: RunDir) -> Path:
    return run.path / "audit" / "final_grade.json"


def _write_once(path: Path, record: dict) -> None:
    """Create the audit record whole or not at all; refuse (FileExistsError) if one exists.

    Written to a temp file and fsynced, then hard-linked into place: the link fails if the
    record exists, and a kill at any moment never leaves a half-written record behind."""
    path.parent.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".final_grade.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write((json.dumps(record, indent=2) + "\n").encode())
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, path)
    finally:
        os.unlink(tmp)


def grade_once(run: RunDir, state: RunState, scorer: Scorer | None) -> dict | None:
    """Grade the final submission once with ``scorer`` (the test answers' Scorer; None when
    the task has none). Returns the grade record, or None when there is nothing to grade.

    The audit record (node, code hash, submission hash, score, time) is created exclusively
    before the journal records it, so a kill between the two never allows a second grading.
    """
    if state.final_grade is not None:
        return state.final_grade
    audit = audit_path(run)
    if audit.exists():  # graded, then killed before the journal said so
        graded = json.loads(audit.read_text())
        events.final_graded(run.journal, graded)
        state.final_grade = graded
        return graded
    # The final stage's choice (a refit on all labelled rows, or the best node) when it ran.
    where = run.path / "final" if state.final_choice else run.best_dir
    submission = where / "submission.csv"
    if scorer is None or state.best_id is None or not submission.exists():
        return None
    spec = run.spec
    record: dict = {
        "node": (state.final_choice or {}).get("node", state.best_id),
        "best_node": state.best_id,
        "refit": bool((state.final_choice or {}).get("refit")),
        "metric": spec.metric,
        "submission_sha256": sha256_file(submission),
        "code_sha256": sha256_file(where / "solution.py"),
        "holdout_score": state.graph[state.best_id].score,
        "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    try:
        record.update(test_score=scorer.score(submission).value, valid=True)
    except SubmissionError as exc:
        record.update(test_score=None, valid=False, error=f"{exc.reason}: {exc.message}")
    except ValueError as exc:
        record.update(test_score=None, valid=False, error=f"cannot be scored with {spec.metric}: {exc}")
    _write_once(audit, record)
    events.final_graded(run.journal, record)
    atomic_write(run.best_dir / "final_grade.json", json.dumps(record, indent=2))
    state.final_grade = record
    return record
