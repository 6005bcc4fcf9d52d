"""Helpers shared by the CLI command groups: where tasks and runs live, error display."""

from __future__ import annotations

import errno
import os
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

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
    return path


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def is_tty() -> bool:
    return sys.stdout.isatty()
