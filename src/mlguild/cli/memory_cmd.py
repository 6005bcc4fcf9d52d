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
from .common import console, plain, user_errors

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
            table = Table("run", "task", "type", "metric", "records")
            for row in memory.runs()[:limit]:
                table.add_row(*(plain(row[k]) for k in ("run", "task", "task_type", "metric", "records")))
        else:
            table = _records_table(memory.recent(limit, run=run, task=task))
        console.print(table)


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
        removed = _open(store).forget(run=run, task=task, ids=list(records) if records else None)
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
    table = Table("id", "run", "node", "op", "outcome", "record")
    for record_id, exp in rows:
        table.add_row(
            str(record_id), plain(exp.run), plain(exp.node), plain(exp.op), plain(exp.outcome), plain(exp.line())
        )
    return table
