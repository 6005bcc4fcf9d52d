"""Grading a submission after the fact, as MLE-bench does: the score on the task's test
answers (rounded to 5 decimals; an invalid file scores None), and, given the competition's
leaderboard, the medal thresholds and flags (``mlguild.bench.medals``).

This is for ``mlguild grade`` and ``mlguild bench``, outside any run: nothing here feeds a
search. A run's own once-only grade (``mlguild.final.grade``) is separate and stays untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import SubmissionError, TaskError
from ..metrics import get_metric
from ..scoring.scorer import Scorer
from ..task.folder import Task, load_task
from ..util.exact_csv import read_csv_exact
from .medals import Leaderboard, medal_report

LEADERBOARD = "leaderboard.csv"


def submission_of(path: Path) -> Path:
    """The CSV to grade: ``path`` itself, or a run folder's final submission (the final stage's
    choice, else its best node's)."""
    if path.is_dir():
        for candidate in (path / "final" / "submission.csv", path / "best" / "submission.csv"):
            if candidate.is_file():
                return candidate
        raise TaskError(f"{path} holds no final or best submission", "grade a finished run, or a submission CSV")
    return path


def task_of_run(run_dir: Path) -> Task:
    """The task folder a run was made from (its snapshot names it)."""
    try:
        root = json.loads((run_dir / "task.json").read_text())["root"]
    except (OSError, ValueError, KeyError):
        raise TaskError(f"{run_dir} is not a run folder", "pass --task DIR (the task folder)") from None
    return load_task(root)


def run_holding(path: Path) -> Path | None:
    """The run folder a file lies in (``runs/r/final/submission.csv`` is in ``runs/r``), or None."""
    for folder in Path(path).resolve().parents:
        if (folder / "task.json").is_file() and (folder / "journal.jsonl").is_file():
            return folder
    return None


def find_leaderboard(task: Task, given: Path | None = None) -> Path | None:
    """``given``, or a leaderboard.csv in the task folder or the competition folder above it."""
    if given is not None:
        if not given.is_file():
            raise TaskError(f"leaderboard {given} does not exist", "pass MLE-bench's leaderboard.csv of the task")
        return given
    for folder in (task.root, task.root.parent):
        if (folder / LEADERBOARD).is_file():
            return folder / LEADERBOARD
    return None


def grade_submission(task: Task, submission: Path, leaderboard: Path | None = None) -> dict:
    """The grade report of ``submission`` on ``task``'s test answers (and its medals when a
    leaderboard is given or found)."""
    spec = task.spec
    answers = task.answers_path
    if answers is None:
        raise TaskError(
            f"the task {task.root} has no test answers"
            + (f" (private/{spec.answers_file} is missing)" if spec.answers_file else " (answers_file is not set)"),
            "grade against a prepared task whose private/ folder holds the answers",
        )
    report: dict = {
        "task": spec.name,
        "metric": spec.metric,
        "submission": str(submission),
        "submission_exists": submission.is_file(),
        "valid_submission": False,
        "score": None,
        "error": "",
    }
    if report["submission_exists"]:
        labels: set[str] = set()
        if get_metric(spec.metric).prediction == "label":  # every label train has is a fair prediction
            train = read_csv_exact(task.train_path)
            labels = {str(v) for c in spec.target_columns for v in train[c].unique()}
        try:
            scorer = Scorer.from_file(spec, answers, labels=labels, max_bytes=None)
        except ValueError as exc:
            raise TaskError(f"the test answers {answers} are unusable: {exc}", f"check {answers}") from None
        try:
            value = scorer.score(submission).value
            report.update(score=None if value is None else round(value, 5), valid_submission=value is not None)
        except SubmissionError as exc:
            report["error"] = f"{exc.reason}: {exc.message}"
        except ValueError as exc:
            report["error"] = f"cannot be scored with {spec.metric}: {exc}"
    else:
        report["error"] = "no submission file"
    board_path = find_leaderboard(task, leaderboard)
    if board_path is not None:
        board = Leaderboard.read(board_path, get_metric(spec.metric).direction)
        report.update(medal_report(report["score"], board).to_dict(), leaderboard=str(board_path))
    return report
