"""A node's title: one line, written by the brain with its plan, shown by every view.

A brain may set ``Proposal.title`` itself (the recipe brain does, from its plan's heading);
otherwise the title comes from the plan: a ``Title:`` line when the plan has one, else its
first markdown heading, else its first line. Runs journaled before titles existed get theirs
the same way on replay, so every view can rely on a title.
"""

from __future__ import annotations

import re

LIMIT = 80  # characters: a title must fit a graph label and an 80-column table row

_TITLE_LINE = re.compile(r"^\W*title\W*:\s*(.+)$", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+)$")
_MARKUP = re.compile(r"[*_`]+")


def clean(text: str, limit: int = LIMIT) -> str:
    """``text`` as one plain line of at most ``limit`` characters (markdown emphasis dropped)."""
    line = " ".join(_MARKUP.sub("", text).split()).strip(" #:-")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def title_of(plan: str, limit: int = LIMIT) -> str:
    """The title a plan gives itself: its ``Title:`` line, else its first heading, else its first line."""
    lines = [line for line in plan.splitlines() if line.strip()]
    for line in lines:
        match = _TITLE_LINE.match(line.strip())
        if match:
            return clean(match.group(1), limit)
    for line in lines:
        match = _HEADING.match(line)
        if match:
            return clean(match.group(1), limit)
    return clean(lines[0], limit) if lines else ""
