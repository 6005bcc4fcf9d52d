"""Helpers shared by the CLI command groups: where tasks and runs live, error display."""

from __future__ import annotations

import errno
import os
import sys
import textwrap
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape, render
from rich.table import Table

from ..core.errors import MlguildError

# emoji=False: text from data (a column named ":x:") is printed as written, never as an emoji.
console = Console(highlight=False, soft_wrap=True, emoji=False)
# soft_wrap: an error is one line however long; the terminal wraps it, not rich.
err_console = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)

_MAX_SHOWN = 1000
# Errors of the machine, not of mlguild: a full or read-only disk is shown as one line too.
_ENVIRONMENT = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES}


def default_runs_dir() -> Path:
    return Path(os.environ.get("MLGUILD_RUNS", "runs"))


def plain(text: object, limit: int = _MAX_SHOWN) -> str:
    """``text`` made safe to print with rich markup on: markup escaped, control characters
    (newlines, terminal escapes) shown as ``\\n``/``\\x1b``, cut to ``limit`` characters."""
    text = str(text)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text):,} chars)"
    if any(unicodedata.category(c) == "Cc" for c in text):
        text = "".join(repr(c)[1:-1] if unicodedata.category(c) == "Cc" else c for c in text)
    return escape(text)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an MlguildError (or a full/read-only disk) into an error line, a fix line and exit
    code 2, no traceback. What comes from data is escaped: it is shown, never interpreted."""
    try:
        yield
    except MlguildError as exc:
        _print_error(exc.message, exc.fix)
        raise typer.Exit(2) from None
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        _print_error(
            f"{exc.strerror}{where}",
            "free disk space or make the folder writable, then run the command "
            "again (`mlguild resume RUN` continues a run)",
        )
        raise typer.Exit(2) from None


def _print_error(message: str, fix: str | None) -> None:
    err_console.print(f"[bold red]error:[/] {plain(message)}")
    if fix:
        err_console.print(f"[bold]fix:[/] {plain(fix)}")


def fitted_table(headers: list[str], rows: list[list[str]], width: int, right: tuple[str, ...] = ()) -> Table:
    """A table whose columns (rows of escaped text, ``plain``'s) show every value whole on one
    line, but the last one's, which is cut with ``…`` to what is left of ``width``: ids and
    scores are what a user copies, a title can give way. The rows are the caller's to add."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    shown = lambda text: cell_len(render(text).plain)
    fixed = [max([shown(h), *(shown(r[i]) for r in rows)]) for i, h in enumerate(headers[:-1])]
    for header, w in zip(headers, fixed, strict=False):
        table.add_column(header, no_wrap=True, min_width=w, justify="right" if header in right else "left")
    left = width - sum(fixed) - 2 * (len(headers) - 1)  # between two columns: the rule's space and one of padding
    table.add_column(headers[-1], no_wrap=True, overflow="ellipsis", max_width=max(8, left))
    return table


def print_wrapped(text: str, indent: str = "", markup: str = "") -> None:
    """Plain ``text`` (from data: escaped) wrapped to the console's width, every line but the
    first under ``indent`` (which starts the first too): a long reason stays readable on 80 columns."""
    parts = textwrap.wrap(str(text), console.width, initial_indent=indent, subsequent_indent=indent)
    for part in parts or [indent]:
        console.print(f"[{markup}]{plain(part)}[/]" if markup else plain(part))


def unique_match(given: str, names: list[str], what: str, fix: str) -> str:
    """The one of ``names`` that is ``given`` or starts with it (ids are long: a unique start
    is enough); a one-line error naming the candidates otherwise."""
    if given in names:
        return given
    found = [n for n in names if given and n.startswith(given)]
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        raise MlguildError(f"{given!r} is the start of {len(found)} {what}s ({shown})", "give more of it")
    raise MlguildError(f"no {what} {given!r}", fix)


def short_parents(parents: tuple[str, ...] | list[str]) -> str:
    """A node's parents in one short cell: the first and how many more (a blend of 4: ``n0002+3``)."""
    if not parents:
        return "—"
    return parents[0] + (f"+{len(parents) - 1}" if len(parents) > 1 else "")


def latest_run(runs_dir: Path) -> Path:
    # Hidden folders are runs still being created (or whose creation was killed).
    candidates = sorted(
        (p for p in runs_dir.glob("*/journal.jsonl") if not p.parent.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
    )
    if not candidates:
        raise MlguildError(f"no runs in {runs_dir.resolve()}", "start one with `mlguild run example:churn --time 3m`")
    return candidates[-1].parent


def resolve_run(run: str | None, runs_dir: Path) -> Path:
    if run is None:
        return latest_run(runs_dir)
    path = Path(run)
    in_runs = runs_dir / run
    if not _exists(path) and (_exists(in_runs) or _exists(runs_dir / f".{run}.partial")):
        path = in_runs
    elif not _exists(path) and "/" not in run and _exists(runs_dir):  # a run id's unique start
        names = sorted(p.parent.name for p in runs_dir.glob("*/journal.jsonl") if not p.parent.name.startswith("."))
        if any(n.startswith(run) for n in names):
            path = runs_dir / unique_match(run, names, "run", f"see the runs in {runs_dir}")
    return path


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def is_tty() -> bool:
    return sys.stdout.isatty()
