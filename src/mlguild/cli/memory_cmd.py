"""`mlguild memory list|search|show|forget|transfer`: the experience records runs keep for later runs."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from ..config import MemoryConfig, mlguild_home
from ..core.errors import ConfigError
from ..memory import MemoryStore
from ..memory.priors import transfer_by_type
from .common import console, fitted_table, plain, unique_match, user_errors

memory_app = typer.Typer(
    help="The experience records runs keep for later runs (SQLite, $MLGUILD_HOME/memory.sqlite).",
    no_args_is_help=True,
)
_STORE_HELP = "The memory store (default: memory.sqlite in $MLGUILD_HOME, ~/.mlguild)."


def _open(store: Path | None) -> MemoryStore:
    path = (store or mlguild_home() / "memory.sqlite").expanduser()
    if not path.is_file():
        raise ConfigError(
            f"there is no memory store at {path} yet",
            "runs write it as nodes finish (unless run with --no-memory); or name one with --store",
        )
    return MemoryStore(path)


@memory_app.command("list")
def list_(
    run: str | None = typer.Option(None, help="Only this run's records."),
    task: str | None = typer.Option(None, help="Only this task's records."),
    limit: int = typer.Option(30, help="Most rows shown."),
    store: Path | None = typer.Option(None, help=_STORE_HELP),
) -> None:
    """The runs in the store; with --run or --task, their newest records."""
    with user_errors():
        memory = _open(store)
        if run is None and task is None:
            keys = ("run", "records", "task_type", "metric", "task")
            rows = [[plain(row[k]) for k in keys] for row in memory.runs()[:limit]]
            table = fitted_table(["run", "records", "type", "metric", "task"], rows, console.width, right=("records",))
            for cells in rows:
                table.add_row(*cells)
        else:
            table = _records_table(memory.recent(limit, run=_run_named(memory, run), task=task))
        console.print(table)


def _run_named(memory: MemoryStore, run: str | None) -> str | None:
    """The run id ``run`` names in the store: the id or its unique start."""
    if run is None:
        return None
    names = [str(r["run"]) for r in memory.runs()]
    return unique_match(run, names, "run in the memory store", "see the runs with `mlguild memory list`")


@memory_app.command()
def search(
    query: str = typer.Argument(..., help="Words to look for in plans, changes and failures."),
    limit: int = typer.Option(10, help="Most records shown."),
    task_type: str | None = typer.Option(None, help="Only tasks of this type (binary, multiclass, regression...)."),
    store: Path | None = typer.Option(None, help=_STORE_HELP),
) -> None:
    """The records that best match QUERY (BM25)."""
    with user_errors():
        found = _open(store).search(query, limit, task_type=task_type)
    if not found:
        within = f" among {task_type} tasks" if task_type else ""
        console.print(plain(f"no record matches {query!r}{within}; `mlguild memory list` shows what the store holds"))
        return
    console.print(_records_table(found))


@memory_app.command()
def show(
    record: int = typer.Argument(..., help="A record id, as list and search show it."),
    store: Path | None = typer.Option(None, help=_STORE_HELP),
) -> None:
    """One record in full."""
    with user_errors():
        found = _open(store).get(record)
        if found is None:
            raise ConfigError(f"the memory store has no record {record}", "see `mlguild memory list --run RUN`")
        console.print(json.dumps(found.to_dict(), indent=2), markup=False)  # json escapes control characters


@memory_app.command()
def forget(
    records: list[int] = typer.Argument(None, help="Record ids to delete."),
    run: str | None = typer.Option(None, help="Delete every record of this run."),
    task: str | None = typer.Option(None, help="Delete every record of this task."),
    store: Path | None = typer.Option(None, help=_STORE_HELP),
) -> None:
    """Delete records: by id, every record of a run, or every record of a task."""
    with user_errors():
        if not records and run is None and task is None:
            raise ConfigError("nothing to forget was named", "give record ids, --run RUN or --task TASK")
        memory = _open(store)
        removed = memory.forget(run=_run_named(memory, run), task=task, ids=list(records) if records else None)
        console.print(f"forgot {removed} record{'s' if removed != 1 else ''}")


@memory_app.command()
def transfer(
    task_type: str | None = typer.Option(None, help="Only tasks of this type (binary, multiclass, regression...)."),
    max_distance: float = typer.Option(
        MemoryConfig().max_distance, help="How unlike two tasks may be to be compared (memory.max_distance)."
    ),
    store: Path | None = typer.Option(None, help=_STORE_HELP),
) -> None:
    """How far the store's tasks foretell each other's results, per task type: the share of
    other tasks' move gains, run times and family ranks a run counts (1: in full, 0: not)."""
    with user_errors():
        opened = _open(store)
        records = [exp for _, exp in opened.recent(10**9, task_type=task_type)]
        table = Table("task type", "tasks", "records", "gain", "run time", "family rank", "(task, move) pairs")
        for kind, (tasks, count, found) in transfer_by_type(records, max_distance).items():
            cells = (f"{found.gain:.2f}", f"{found.cost:.2f}", f"{found.family:.2f}", str(found.pairs))
            table.add_row(plain(kind), str(tasks), str(count), *cells)
        console.print(table)


def _records_table(rows) -> Table:
    """Ids whole, the record's line last (it gives way on 80 columns; `memory show ID` has it all)."""
    cells = [
        [str(record_id), plain(exp.run), plain(exp.node), plain(exp.op), plain(exp.outcome), plain(exp.line())]
        for record_id, exp in rows
    ]
    table = fitted_table(["id", "run", "node", "op", "outcome", "record"], cells, console.width, right=("id",))
    for row in cells:
        table.add_row(*row)
    return table
