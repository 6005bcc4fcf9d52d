"""`mlguild init` and `mlguild examples`: turning sources into task folders."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ..core.errors import KaggleError, TaskError
from ..kaggle.api import competition_slug
from ..sources.resolve import folder_task as _folder_task
from ..sources.resolve import path_exists, task_name
from ..sources.resolve import resolve_task as _resolve_task
from ..task.folder import Task, load_task, test_gap
from .common import console, plain, user_errors


def _say(line: str) -> None:
    console.print(plain(line))


def resolve_task(source: str, target: str | None = None, fresh: bool = False, metric: str | None = None) -> Task:
    """``mlguild.sources.resolve.resolve_task``, saying on the console what inference found."""
    return _resolve_task(source, target, fresh, metric, say=_say)


def folder_task(folder: Path, target: str | None, metric: str | None, write: bool = True) -> Task:
    """``mlguild.sources.resolve.folder_task``, saying on the console what inference found."""
    return _folder_task(folder, target, metric, write, say=_say)


def init(
    source: str = typer.Argument(
        ...,
        help="example:NAME, csv:PATH/TO/train.csv, mlebench:COMPETITION-ID, or a Kaggle competition "
        "(https://www.kaggle.com/competitions/NAME, kaggle:NAME or NAME)",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Task folder to create (default: ./tasks/NAME)."),
    target: str | None = typer.Option(None, help="Target column (csv: sources); several as a,b,c."),
    test: Path | None = typer.Option(None, help="Test CSV (csv: sources); without it 20% of rows become the test set."),
    id_column: str | None = typer.Option(None, "--id", help="Id column (csv: sources); inferred when omitted."),
    task_type: str | None = typer.Option(
        None, help="binary, multiclass, regression or ranking (inferred when omitted)."
    ),
    group: str | None = typer.Option(
        None, help="Ranking (csv: sources): the column whose rows are ranked against each other (a query, a user)."
    ),
    metric: str | None = typer.Option(None, help="Metric name (a sensible default per task type)."),
    time_column: str | None = typer.Option(
        None,
        "--time-column",
        help="Column of dates ordering the rows in time (csv: sources): the holdout (and without --test, the test set) is then the latest rows; inferred when the test rows come after the train rows.",
    ),
    force: bool = typer.Option(False, help="Overwrite an existing task folder."),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="mlebench: sources: MLE-bench's data folder (with COMPETITION-ID/prepared/)."
    ),
) -> None:
    """Convert a source into a task folder (task.yaml, description.md, public/, private/).
    An MLE-bench task is used where it lies: only its task.yaml is written."""
    from ..sources import init_task

    with user_errors():
        bare = ":" not in source and not path_exists(Path(source))
        slug = competition_slug(f"kaggle:{source}" if bare else source)
        if slug is not None:
            try:
                _init_kaggle(slug, out, target, metric, force)
            except KaggleError as exc:
                if bare:  # perhaps not meant as a Kaggle competition at all
                    exc.fix = f"{exc.fix}; or, if {source!r} was not meant as a Kaggle competition: use example:NAME, csv:PATH, or an existing folder"
                raise
            return
        kind, _, rest = source.partition(":")
        if not rest:
            raise TaskError(f"{source!r} is not a source", "use example:NAME, csv:PATH or mlebench:COMPETITION-ID")
        if kind == "mlebench":
            _init_mlebench(rest, data_dir, target, metric)
            return
        dest = out or Path("tasks") / task_name(kind, rest)
        options: dict[str, object] = {"overwrite": force}
        if kind == "csv":
            options.update(target=target, test=test, id_column=id_column, task_type=task_type, metric=metric)
            options.update(time_column=time_column, say=_say)
            if group is not None:
                options["group"] = group
        elif any([target, test, id_column, task_type, metric, time_column, group]):
            raise TaskError(
                "--target/--test/--id/--task-type/--metric/--time-column apply to csv: sources only",
                f"run `mlguild init {source}`",
            )
        path = init_task(source, dest, **options)
        task = load_task(path)
        s = task.spec
        console.print(f"task [bold]{plain(s.name)}[/] written to {plain(path)}")
        console.print(
            plain(
                f"  {s.task_type}, {s.modality}; metric {s.metric} ({s.metric_direction}); "
                f"id {s.id_column}; target {', '.join(s.target_columns)}"
            )
        )
        if s.time_column and kind != "csv":  # a csv: source said it with its decision
            console.print(plain(f"  ordered in time by {s.time_column!r}: the holdout is the latest labelled rows"))
        if (gap := test_gap(task)) is not None:
            console.print(f"[yellow]warning:[/] {plain(gap)}")
        console.print(plain(f"  edit {path / 'task.yaml'} to change any of these, then: mlguild run {path} --time 10m"))


def _init_kaggle(slug: str, out: Path | None, target: str | None, metric: str | None, force: bool) -> None:
    from ..sources.kaggle_source import build_from_kaggle

    dest = out or Path("tasks") / slug
    inferred = build_from_kaggle(slug, dest, target=target, metric=metric, overwrite=force)
    console.print(f"downloaded [bold]{plain(slug)}[/] into {plain(inferred.root)}")
    for note in inferred.notes:
        console.print(plain(f"  {note}"))
    console.print(
        plain(f"  edit {inferred.root / 'task.yaml'} to change any of these, then: mlguild run {inferred.root}")
    )


def _init_mlebench(competition: str, data_dir: Path | None, target: str | None, metric: str | None) -> None:
    if data_dir is None:
        raise TaskError(
            "an MLE-bench task needs the folder it was prepared into",
            f"pass it: mlguild init mlebench:{competition} --data-dir DIR (DIR/{competition}/prepared/ holds it)",
        )
    folder = data_dir / competition
    if not (folder / "prepared" / "public").is_dir():
        raise TaskError(
            f"{folder}/prepared/public does not exist",
            f"prepare it with MLE-bench first (`mlebench prepare -c {competition} --data-dir {data_dir}`)",
        )
    task = folder_task(folder, target, metric)
    s = task.spec
    console.print(plain(f"task {s.name} ready in {task.root}: {s.task_type}, metric {s.metric}"))
    console.print(plain(f"  run it: mlguild run {task.root} --time 1h; grade it: mlguild grade runs/<run-id>"))


def examples() -> None:
    """List the bundled example tasks."""
    from ..sources.examples import EXAMPLES

    table = Table("name", "what", "data from")
    for ex in EXAMPLES.values():
        table.add_row(f"example:{ex.name}", ex.summary, ex.package)
    console.print(table)
