"""`mlguild knowledge add|list|show|remove`: a task's community material (mlguild.task.knowledge)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .common import console, fitted_table, plain, user_errors

if TYPE_CHECKING:
    from ..task.knowledge import Ingested

knowledge_app = typer.Typer(help="A task's community material: posts and public notebooks.", no_args_is_help=True)
_TASK = typer.Option(Path("."), "--task", help="The task folder (default: the current folder).")


@knowledge_app.command("add")
def add(
    sources: list[str] = typer.Argument(
        ...,
        help="Markdown posts (front matter), .ipynb notebooks, .py scripts, or folders; or kaggle:NAME "
        "(or the competition's URL) for a Kaggle competition's public notebooks and discussions.",
    ),
    task: Path = _TASK,
    cutoff: str | None = typer.Option(
        None,
        help="Keep nothing dated after this day, YYYY-MM-DD; remembered for the task "
        "(default: the one given before, else the competition's deadline, if known).",
    ),
    limit: int = typer.Option(
        30, min=1, help="kaggle: sources: how many notebooks, and how many discussion topics, most voted first."
    ),
) -> None:
    """Ingest community material into the task's knowledge/ folder. A --cutoff given once is
    kept for the task: later adds apply it too."""
    from ..kaggle.api import competition_slug
    from ..sources.kaggle_knowledge import ingest_competition
    from ..task.knowledge import add_items, parse_date, remember_cutoff, task_cutoff
    from .task_cmd import folder_task

    with user_errors():
        root = folder_task(task, None, None).root
        if cutoff:
            when: date | None = parse_date(cutoff, "--cutoff")
            remember_cutoff(root, parse_date(cutoff, "--cutoff"))
        else:
            when = task_cutoff(root)
        slugs = [slug for slug in map(competition_slug, sources) if slug]
        local = [Path(s) for s in sources if not competition_slug(s)]
        if local:
            _report(root, add_items(root, local, when), when)
        for slug in slugs:
            fetched = ingest_competition(root, slug, limit=limit, cutoff=when)
            for warning in fetched.warnings:
                console.print(f"[yellow]warning:[/] {plain(warning)}")
            listed = f"kaggle:{slug}: {fetched.notebooks} notebook(s) and {fetched.topics} discussion topic(s) listed"
            console.print(plain(listed))
            _report(root, fetched.ingested, fetched.cutoff)


def _report(root: Path, result: Ingested, cutoff: date | None) -> None:
    said = f"cut-off {cutoff.isoformat()}" if cutoff else "no cut-off (the task has no deadline; --cutoff sets one)"
    console.print(plain(f"added {len(result.added)} item(s) to {root / 'knowledge'}; {said}"))
    for source, when in result.after_cutoff:
        console.print(plain(f"  left out (dated {when}, after the cut-off): {source}"))
    if result.duplicates:
        console.print(plain(f"  {result.duplicates} already there (same text)"))


@knowledge_app.command("list")
def list_(task: Path = _TASK) -> None:
    """The task's items, most voted first, with their quality signals (the author's tier; `show`
    names the author); then what earlier runs of the task learnt, which a new run's pools start
    with (the guild: the shared memory's records of those runs), and what earlier runs of
    similar tasks learnt, each with its weight (similarity times measured transfer)."""
    from ..task.identity import data_fingerprint, task_key
    from ..task.knowledge import list_items
    from .task_cmd import folder_task

    with user_errors():
        found = folder_task(task, None, None)
        items = list_items(found.root)
        guild, similar = _guild_rows(task_key(found.spec.name, data_fingerprint(found.train_path)))
    rows = []
    for item in items:
        score = f"{item.public_score:g}" if item.public_score is not None else ""
        tier = item.author_tier if len(item.author_tier) <= 12 else item.author_tier[:11] + "…"
        rows.append(
            [plain(item.id), plain(item.kind), str(item.votes), score, plain(item.date), plain(tier), plain(item.title)]
        )
    # The id whole (what `show` and `remove` take), the title last: it gives way on 80
    # columns; the author's name is `show`'s.
    headers = ["id", "kind", "votes", "score", "date", "tier", "title"]
    table = fitted_table(headers, rows, console.width, right=("votes", "score"))
    for row in rows:
        table.add_row(*row)
    console.print(table if items else "no community material yet: `mlguild knowledge add PATH|kaggle:NAME --task DIR`")
    if guild:
        console.print(f"from earlier runs of this task (the guild; a new run's pools start with these): {len(guild)}")
        headers = ["run/node", "op", "outcome", "score", "title"]
        table = fitted_table(headers, guild, console.width, right=("score",))
        for row in guild:
            table.add_row(*row)
        console.print(table)
    if similar:
        console.print(
            f"from earlier runs of similar tasks (weighted by similarity times measured transfer): {len(similar)}"
        )
        headers = ["run/node", "task", "weight", "outcome", "score", "title"]
        table = fitted_table(headers, similar, console.width, right=("weight", "score"))
        for row in similar:
            table.add_row(*row)
        console.print(table)


def _guild_rows(task_name: str) -> tuple[list[list[str]], list[list[str]]]:
    """The shared memory's records of earlier runs of the task, and of similar tasks (known
    once a run of this task has stored its traits), as `list` shows them."""
    from ..config import load_config
    from ..pools.guild import earlier_records, shared_store, similar_records, task_traits

    config = load_config(None, [])
    store = shared_store(config)
    if store is None:
        return [], []
    try:
        records = earlier_records(store, task_name, this_run="")
        traits = task_traits(store, task_name)
        similar = similar_records(store, task_name, "", traits, config.memory.max_distance) if traits else []
    finally:
        store.close()
    score = lambda r: f"{r.score:.5g}" if r.score is not None else ""
    same = [
        [plain(f"{r.run}/{r.node}"), plain(r.op), plain(r.outcome.replace("_", " ")), score(r), plain(r.title)]
        for r in records
    ]
    others = [
        [
            plain(f"{r.run}/{r.node}"),
            plain(r.name or r.task),
            f"{w:.2f}",
            plain(r.outcome.replace("_", " ")),
            score(r),
            plain(r.title),
        ]
        for r, w in similar
    ]
    return same, others


@knowledge_app.command("show")
def show(
    item_id: str = typer.Argument(..., help="An item id (or its unique start), from `mlguild knowledge list`."),
    task: Path = _TASK,
) -> None:
    """One item: its signals and its text."""
    from ..task.knowledge import find_item
    from .task_cmd import folder_task

    with user_errors():
        item = find_item(folder_task(task, None, None).root, item_id)
    console.print(
        plain(f"{item.title} — {item.kind} by {item.author} ({item.author_tier}), {item.votes} votes, {item.date}")
    )
    console.print(plain(f"source: {item.source}; public score: {item.public_score}"))
    console.print(item.text, markup=False)


@knowledge_app.command("remove")
def remove(
    item_id: str = typer.Argument(..., help="An item id (or its unique start), from `mlguild knowledge list`."),
    task: Path = _TASK,
) -> None:
    """Delete one item from the task's knowledge (a later run no longer reads it)."""
    from ..task.knowledge import remove_item
    from .task_cmd import folder_task

    with user_errors():
        item = remove_item(folder_task(task, None, None).root, item_id)
    console.print(plain(f"removed {item.id}: {item.title} ({item.source})"))
