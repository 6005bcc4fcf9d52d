"""A script's sections, and the change from one script to the next shown section by section.

A section is what a reader edits as one piece: the text between two header comments
(``# ----- features``, ``# ===== model``, ``# %%``) when the script has such headers, else
one top-level statement (a whole function, a whole loop) with the comments right above it.
An excerpt of a script for a prompt is made of whole sections only: a prompt that cuts a
feature function in the middle makes the model guess the column names it cannot see.

``change_view`` is what a code review of an edit reads (mlguild.brains.llm.review): the
sections of the new script that the edit touched, whole and numbered as the new script is,
changed lines marked ``+`` and removed ones ``-``, not the unchanged rest again.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..util import pysource

_HEADER = re.compile(r"^#\s*(?:[-=#*~]{4,}|%%)")


@dataclass(frozen=True)
class Change:
    """How far a new script is from an old one: lines added or changed, lines removed, and
    the sections (1-based inclusive line ranges of the new script) those touch."""

    added: int
    removed: int
    sections: tuple[tuple[int, int], ...]

    @property
    def lines(self) -> int:
        """The size of the edit: the larger of its added and its removed lines."""
        return max(self.added, self.removed)


def sections(code: str) -> list[tuple[int, int]]:
    """The sections of ``code`` as 1-based inclusive line ranges covering every line."""
    lines = code.splitlines()
    if not lines:
        return []
    heads = [i + 1 for i, line in enumerate(lines) if _HEADER.match(line)]
    if heads:
        starts = sorted({1, *heads})
    else:
        starts = _statement_starts(code, lines)
    ends = [s - 1 for s in starts[1:]] + [len(lines)]
    return list(zip(starts, ends, strict=True))


def _statement_starts(code: str, lines: list[str]) -> list[int]:
    """Where each top-level statement starts, with the comment block right above it; a
    script that does not parse is one section (nothing is cut)."""
    try:
        tree = pysource.parse(code)
    except SyntaxError:
        return [1]
    starts = {1}
    for node in tree.body:
        start = node.lineno
        decorators = getattr(node, "decorator_list", [])
        if decorators:
            start = min(d.lineno for d in decorators)
        while start > 1 and lines[start - 2].lstrip().startswith("#"):
            start -= 1
        starts.add(start)
    return sorted(starts)


def change(old: str, new: str) -> Change:
    """What changed from ``old`` to ``new``, and which sections of ``new`` it touched (a
    removal touches the section the lines after it are in)."""
    before, after = old.splitlines(), new.splitlines()
    added = removed = 0
    touched: set[int] = set()  # lines of the new script next to or in a change
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        added += j2 - j1
        removed += i2 - i1
        touched |= set(range(j1 + 1, j2 + 1)) or {min(j1 + 1, max(len(after), 1))}
    ranges = tuple(r for r in sections(new) if any(r[0] <= line <= r[1] for line in touched))
    return Change(added, removed, ranges)


def change_view(old: str, new: str) -> str:
    """The sections of ``new`` an edit of ``old`` touched, whole: each line numbered as in
    ``new``, ``+`` on an added or changed line, removed lines as ``-`` where they were; a
    ``...`` line where unchanged sections are left out."""
    before, after = old.splitlines(), new.splitlines()
    touched = change(old, new).sections
    inside = lambda line: any(a <= line <= b for a, b in touched)
    out: list[str] = []
    last = 0  # the last line of ``new`` shown

    def at(number: int) -> None:  # a "..." where unchanged sections were left out
        nonlocal last
        if last and number > last + 1:
            out.append("   ...")
        last = max(last, number)

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("delete", "replace") and (inside(j1 + 1) or inside(j1) or not after):
            at(j1)
            out += [f"    |- {line}" for line in before[i1:i2]]
        for j in range(j1, j2):
            if inside(j + 1):
                at(j + 1)
                out.append(f"{j + 1:4d}|{' ' if tag == 'equal' else '+'} {after[j]}")
    return "\n".join(out)
