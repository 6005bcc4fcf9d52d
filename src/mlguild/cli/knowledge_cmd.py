"""`mlguild knowledge add|list|show`: a task's community material (mlguild.knowledge)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ..errors import TaskError
from .common import console, plain, user_errors

knowledge_app = typer.Typer(help="A task's community material: posts and public notebooks.", no_args_is_help=True)
_TASK = typer.Option(Path("."), "--task", help="The task folder (default: the current folder).")


@knowledge_app.command("add")
def add(
    paths: list[Path] = typer.Argument(
        ..., help="Markdown posts (front matter), .ipynb notebooks, .py scripts, or folders."
    ),
    task: Path = _TASK,
    cutoff: str | None = typer.Option(
        None, help="Keep nothing dated after this day, YYYY-MM-DD (default: the competition's deadline, if known)."
    ),
) -> None:
    """Ingest community material into the task's knowledge/ folder."""
    from ..knowledge import add_items, parse_date, task_cutoff
    from .task_cmd import folder_task

    with user_errors():
        root = folder_task(task, None, None).root
        limit = parse_date(cutoff, "--cutoff") if cutoff else task_cutoff(root)
        result = add_items(root, paths, limit)
        said = f"cut-off {limit.isoformat()}" if limit else "no cut-off (the task has no deadline; --cutoff sets one)"
        console.print(plain(f"added {len(result.added)} item(s) to {root / 'knowledge'}; {said}"))
        for source, when in result.after_cutoff:
            console.print(plain(f"  left out (dated {when}, after the cut-off): {source}"))
        if result.duplicates:
            console.print(plain(f"  {result.duplicates} already there (same text)"))


@knowledge_app.command("list")
def list_(task: Path = _TASK) -> None:
    """The task's items, most voted first, with their quality signals."""
    from ..knowledge import list_items
    from .task_cmd import folder_task

    with user_errors():
        items = list_items(folder_task(task, None, None).root)
    table = Table("id", "kind", "title", "author (tier)", "votes", "public score", "date")
    for item in items:
        score = f"{item.public_score:g}" if item.public_score is not None else ""
        table.add_row(
            item.id, item.kind, plain(item.title[:60]), plain(f"{item.author} ({item.author_tier})"),
            str(item.votes), score, item.date,
        )  # fmt: skip
    console.print(table if items else "no community material yet: `mlguild knowledge add PATH --task DIR`")


@knowledge_app.command("show")
def show(
    item_id: str = typer.Argument(..., help="An item id, from `mlguild knowledge list`."), task: Path = _TASK
) -> None:
    """One item: its signals and its text."""
    from ..knowledge import list_items
    from .task_cmd import folder_task

    with user_errors():
        found = [i for i in list_items(folder_task(task, None, None).root) if i.id == item_id]
        if not found:
            raise TaskError(f"no item {item_id!r} in the task's knowledge", "see `mlguild knowledge list --task DIR`")
    item = found[0]
    console.print(
        plain(f"{item.title} — {item.kind} by {item.author} ({item.author_tier}), {item.votes} votes, {item.date}")
    )
    console.print(plain(f"source: {item.source}; public score: {item.public_score}"))
    console.print(item.text, markup=False)
