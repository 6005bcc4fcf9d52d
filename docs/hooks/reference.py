"""MkDocs hook: the reference pages are generated from the code at every build
(``mlguild.cli.reference``), so an option or a setting cannot be missing from them."""

from __future__ import annotations

from typing import Any

MARKERS = {
    "<!-- generated: cli -->": "cli_reference",
    "<!-- generated: config -->": "config_reference",
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    from mlguild.cli import reference

    for marker, name in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, getattr(reference, name)())
    return markdown
