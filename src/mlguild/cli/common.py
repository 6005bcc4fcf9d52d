"""Helpers shared by the CLI command groups: where tasks and runs live, error display."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import typer
from rich.console import Console

from ..errors import MlguildError

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False)


def mlguild_home() -> Path:
    return Path(os.environ.get("MLGUILD_HOME", Path.home() / ".mlguild")).expanduser()


def default_runs_dir() -> Path:
    return Path(os.environ.get("MLGUILD_RUNS", "runs"))


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an MlguildError into a two-line message and exit code 2 (no traceback)."""
    try:
        yield
    except MlguildError as exc:
        err_console.print(f"[bold red]error:[/] {exc.message}")
        if exc.fix:
            err_console.print(f"[bold]fix:[/] {exc.fix}")
        raise typer.Exit(2) from None


def latest_run(runs_dir: Path) -> Path:
    candidates = sorted((p for p in runs_dir.glob("*/journal.jsonl")), key=lambda p: p.stat().st_mtime)
    if not candidates:
        raise MlguildError(f"no runs in {runs_dir.resolve()}", "start one with `mlguild run example:churn --time 3m`")
    return candidates[-1].parent


def resolve_run(run: str | None, runs_dir: Path) -> Path:
    if run is None:
        return latest_run(runs_dir)
    path = Path(run)
    if not path.exists() and (runs_dir / run).exists():
        path = runs_dir / run
    return path


def is_tty() -> bool:
    return sys.stdout.isatty()
