"""`mlguild export` and `mlguild predict`: take a run's final solution away, and apply it to new rows."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import console, default_runs_dir, plain, resolve_run, user_errors


def export(
    run: str = typer.Argument(..., help="The run (a folder, or a run id under --runs-dir)."),
    dest: Path = typer.Argument(..., help="The folder to write the export to."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier export in DEST."),
) -> None:
    """Write a finished run's final solution as a folder to hand over: its script(s) (a blend
    with its members), the data they were trained on, pinned requirements, a README saying
    how to rerun it, and the evidence (scores, seeds, lineage) in export.json."""
    from ..export.bundle import export_run

    with user_errors():
        path = resolve_run(run, runs_dir or default_runs_dir()).expanduser().absolute()
        written = export_run(path, dest, overwrite=force)
    console.print(plain(f"exported the final solution of {path.name} to {written}"))
    console.print(plain(f"predict new rows: mlguild predict {written} NEW.csv --out predictions.csv"))


def predict(
    source: str = typer.Argument(..., help="An export folder (`mlguild export`), or a finished run."),
    rows: Path = typer.Argument(..., help="A CSV of new rows, with the columns of the task's test file."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the predictions (submission format)."),
    runs_dir: Path = typer.Option(None, help="Where runs are, for a run id (default ./runs or $MLGUILD_RUNS)."),
    sandbox: str = typer.Option("auto", help="Sandbox the scripts run in: auto, bwrap or local."),
    timeout: str | None = typer.Option(
        None, help="Most time one script may run, e.g. 20m (default: the run's sandbox.script_timeout_s)."
    ),
) -> None:
    """Predict new rows with a run's final solution, in the sandbox: a script that saved its
    fitted model applies it without fitting; any other is refitted as in the run, with its seed
    and the new rows as its test rows. Each says which it did; the predictions are checked
    like any submission before they are written."""
    from ..config import parse_duration
    from ..export.predict import predict as predict_rows

    with user_errors():
        path = resolve_run(source, runs_dir or default_runs_dir()).expanduser().absolute()
        timeout_s = parse_duration(timeout, "--timeout") if timeout else None
        done = predict_rows(
            path, rows, out, sandbox=sandbox, timeout_s=timeout_s, say=lambda line: console.print(plain(line))
        )
    console.print(plain(f"wrote {done.rows:,} predictions to {done.path} ({done.seconds:.1f} s of scripts)"))
