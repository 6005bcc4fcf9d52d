"""How much of a node's script is code the community already shared (novelty, measured).

The community cycle asks for new components, and a model says which of its components are
new; nothing in that says whether the script is a public notebook copied whole. So each
finished node's script is compared with the code of every knowledge item (a script's text,
a notebook's or a post's fenced code blocks): both are cut into overlapping runs of
``SHINGLE`` normalised tokens (comments dropped, every string literal one token, every number
one token, names kept as written), and the node's overlap with an item is the share of its
script's runs found in the item's code (containment: a script that copies half a long
notebook counts as much as one that copies a short one whole). The largest overlap, with its
item, goes into the node's report; at ``pools.near_copy_overlap`` or more the node is a
near-copy, and its report and the pools say so.

Token runs, not an AST: notebook code often does not parse (shell lines, magics, cells out of
order), and renaming a variable or two leaves most runs of a copy intact.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import MlguildError
from ..task.knowledge import Item, knowledge_dir, list_items

SHINGLE = 8  # tokens per run: long enough that the imports and calls every script has rarely match alone
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_STRING = re.compile(r"(?s)[rRbBuUfF]{0,2}(\"\"\".*?\"\"\"|'''.*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')")
_COMMENT = re.compile(r"#[^\n]*")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\S")


@dataclass(frozen=True)
class Overlap:
    item: str  # the knowledge item's id
    title: str
    share: float  # of the script's token runs found in the item's code, 0..1
    near_copy: bool


def item_code(item: Item) -> str:
    """The code a knowledge item carries: its fenced code blocks (how notebooks and scripts are
    stored), or a script's whole text when it has none."""
    blocks = _FENCE.findall(item.text)
    if blocks:
        return "\n".join(blocks)
    return item.text if item.kind == "script" else ""


def tokens(code: str) -> list[str]:
    """The code's tokens with its comments dropped and every string and number made one token."""
    code = _STRING.sub(" S ", code)
    code = _COMMENT.sub(" ", code)
    return ["0" if t[0].isdigit() else t for t in _TOKEN.findall(code)]


def shingles(code: str) -> frozenset[int]:
    """The hashes of the code's runs of ``SHINGLE`` tokens (none for shorter code)."""
    toks = tokens(code)
    runs = (" ".join(toks[i : i + SHINGLE]) for i in range(len(toks) - SHINGLE + 1))
    return frozenset(zlib.crc32(run.encode()) for run in runs)


class CommunityCode:
    """The token runs of every knowledge item that carries code, ready to compare scripts with.
    With ``task_root``, the task's knowledge/ folder is read again whenever its files change
    (an item added while the run goes on counts from then on)."""

    def __init__(self, near_copy: float, task_root: Path | None = None, items: Iterable[Item] = ()):
        self.near_copy = near_copy
        self.task_root = task_root
        self.runs: dict[str, tuple[str, frozenset[int]]] = {}
        self._listing: tuple | None = None
        self._add(items)

    def _add(self, items: Iterable[Item]) -> None:
        for item in items:
            runs = shingles(item_code(item))
            if runs:
                self.runs[item.id] = (item.title, runs)

    def _refresh(self) -> None:
        if self.task_root is None:
            return
        folder = knowledge_dir(self.task_root)
        try:
            listing = tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()))
        except OSError:  # no knowledge folder
            listing = ()
        if listing != self._listing:
            self._listing = listing
            self.runs = {}
            try:
                self._add(list_items(self.task_root) if listing else ())
            except (MlguildError, OSError, ValueError):  # an item being written or hand-broken: none counted
                self._listing = None

    def closest(self, code: str) -> Overlap | None:
        """The item whose code holds the largest share of ``code``'s token runs; None when no
        item carries code or the script is too short to compare."""
        self._refresh()
        mine = shingles(code)
        if not mine or not self.runs:
            return None
        share, item = max((len(mine & runs) / len(mine), item) for item, (_, runs) in self.runs.items())
        return Overlap(item, self.runs[item][0], round(share, 4), share >= self.near_copy)
