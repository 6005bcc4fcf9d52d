"""`mlguild config`: every setting a run takes, with its default and what it does."""

from __future__ import annotations

import typer
from rich.table import Table

from ..config import matching_settings, settings
from ..core.errors import ConfigError
from .common import console, plain, user_errors


def config(
    section: str = typer.Argument(
        None, help="A section (search.mcgs), a setting, or any part of a name (holdout): only those settings."
    ),
) -> None:
    """Every setting (set with --set name=value or a --config YAML file): default and meaning."""
    with user_errors():
        rows = matching_settings(section)
        if not rows:
            sections = sorted({name.split(".")[0] for name, _, _ in settings()})
            raise ConfigError(f"no setting is named {section!r}", f"use one of the sections: {', '.join(sections)}")
        table = Table("setting", "default", "what it does")
        for name, default, description in rows:
            table.add_row(plain(name), plain(default), plain(description))
        console.print(table)
