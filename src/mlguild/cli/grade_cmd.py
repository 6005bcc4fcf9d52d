"""`mlguild grade`: a submission's score on a task's test answers, and its medal."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..core.errors import TaskError
from .common import console, plain, user_errors

INVALID_EXIT = 1  # the submission was read and is invalid (2 stays a usage error)


def grade(
    submission: Path = typer.Argument(..., help="A submission CSV, or a run folder (its final submission)."),
    task: Path | None = typer.Option(
        None, "--task", help="The task folder with the test answers (default: the run's own task)."
    ),
    leaderboard: Path | None = typer.Option(
        None, help="The competition's leaderboard.csv (default: one in the task folder or the folder above it)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Score a submission as MLE-bench does (5 decimals; an invalid file scores nothing) and,
    given the leaderboard, its medal thresholds and flags. Nothing is written in the task folder (one
    whose sample submission alone lists the test rows is converted under $MLGUILD_HOME/tasks, as
    `run` converts it).

    Exits 0 when the submission was graded, 1 when it is invalid, 2 on a usage error."""
    from ..bench.grading import grade_submission, run_holding, submission_of, task_of_run
    from .task_cmd import folder_task

    with user_errors():
        if not submission.exists():
            raise TaskError(f"{submission} does not exist", "give a submission CSV or a run folder")
        if task is not None:
            loaded = folder_task(task, None, None, write=False)
        elif submission.is_dir():
            loaded = task_of_run(submission)
        elif (run := run_holding(submission)) is not None:  # a file of a run: the run's own task
            loaded = task_of_run(run)
        else:
            raise TaskError(
                "which task is this submission for?", f"pass --task DIR: mlguild grade {submission} --task DIR"
            )
        report = grade_submission(loaded, submission_of(submission), leaderboard)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    if report["error"]:
        raise typer.Exit(INVALID_EXIT)  # a script grading many files must not read an invalid one as graded


def _print(report: dict) -> None:
    score = report["score"]
    shown = f"{score:.5f}".rstrip("0").rstrip(".") if score is not None else "none (invalid)"
    console.print(plain(f"{report['task']}: {report['metric']} {shown}"))
    if report["error"]:
        console.print(plain(f"  invalid submission: {report['error']}"))
    if "any_medal" in report:
        medal = report["medal"] or "no medal"
        console.print(
            plain(
                f"  {medal}; above median: {'yes' if report['above_median'] else 'no'}; "
                f"win rate {100 * report['win_rate']:.1f}% ({report['n_teams']} teams; thresholds gold {report['gold_threshold']:g}, "
                f"silver {report['silver_threshold']:g}, bronze {report['bronze_threshold']:g}, "
                f"median {report['median_threshold']:g})"
            )
        )
    else:
        console.print("  no leaderboard: pass --leaderboard leaderboard.csv for medals")
