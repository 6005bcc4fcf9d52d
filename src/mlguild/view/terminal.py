"""The live terminal view of a run: what each worker is doing, the best node, a sparkline of
the scores, the budget as bars (time, nodes, LLM tokens and cost) and failures by class.

``Snapshot`` holds the numbers; ``board`` turns one into a rich renderable and ``lines`` into
plain text (logs, CI, ``--quiet``), so both are tested without a terminal. The CLI's
``Progress`` fills a snapshot from the agent on every refresh.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..core.score import format_score

SPARKS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 48  # the newest scores a sparkline shows
BAR_WIDTH = 24


@dataclass
class Snapshot:
    metric: str
    direction: str  # "maximize" | "minimize"
    workers: dict[int, str] = field(default_factory=dict)  # worker -> what it does now ("" idle)
    best: tuple[str, float, str] | None = None  # (node id, holdout score, title)
    best_pooled: bool = False  # the best's score is the pooled score of a small holdout
    scores: list[float] = field(default_factory=list)  # scored nodes, in the order they finished
    floor: float | None = None
    spent_s: float = 0.0
    time_s: float | None = None
    nodes: int = 0
    iterations: int | None = None
    tokens: int = 0
    max_tokens: int | None = None
    cost_usd: float = 0.0
    max_cost_usd: float | None = None
    failures: Counter[str] = field(default_factory=Counter)


def sparkline(scores: list[float], direction: str, width: int = SPARK_WIDTH) -> str:
    """The newest ``width`` scores as block characters, higher meaning better whatever the
    metric's direction (an rmse that falls draws a rising line)."""
    values = scores[-width:]
    if not values:
        return ""
    if direction == "minimize":
        values = [-v for v in values]
    lo, hi = min(values), max(values)
    if hi == lo:
        return SPARKS[len(SPARKS) // 2] * len(values)
    return "".join(SPARKS[round((v - lo) / (hi - lo) * (len(SPARKS) - 1))] for v in values)


def bar(used: float, total: float | None, width: int = BAR_WIDTH) -> str:
    """``used`` of ``total`` as a bar; no total: no bar, the budget is unlimited."""
    if not total:
        return ""
    share = max(0.0, min(1.0, used / total))
    full = round(share * width)
    return "█" * full + "░" * (width - full) + f" {100 * share:3.0f}%"


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "∞"
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _budget_rows(s: Snapshot) -> list[tuple[str, str, str]]:
    rows = [
        ("time", f"{clock(s.spent_s)} of {clock(s.time_s)}", bar(s.spent_s, s.time_s)),
        ("nodes", f"{s.nodes} of {s.iterations if s.iterations else '∞'}", bar(s.nodes, s.iterations)),
    ]
    if s.tokens or s.max_tokens:
        rows.append(
            ("tokens", f"{s.tokens:,} of {f'{s.max_tokens:,}' if s.max_tokens else '∞'}", bar(s.tokens, s.max_tokens))
        )
    if s.cost_usd or s.max_cost_usd:
        limit = f"${s.max_cost_usd:.2f}" if s.max_cost_usd else "∞"
        rows.append(("cost", f"${s.cost_usd:.4f} of {limit}", bar(s.cost_usd, s.max_cost_usd)))
    return rows


def _best_text(s: Snapshot, room: int | None = None) -> str:
    """The best node's score and id whole, and its title in what is left of ``room``."""
    if s.best is None:
        return "—"
    node, score, title = s.best
    head = f"{s.metric} {'pooled ' if s.best_pooled else ''}{format_score(score)} ({node}: "
    if room is not None and len(head) + len(title) + 1 > room:
        title = title[: max(0, room - len(head) - 2)] + "…"
    return f"{head}{title})"


def board(s: Snapshot) -> Group:
    """The live view as a rich renderable (text from data goes in as Text: never markup)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True, min_width=8)  # the names never give way to data
    table.add_column(overflow="ellipsis", no_wrap=True)
    for worker in sorted(s.workers):
        doing = s.workers[worker]
        table.add_row(f"worker {worker}", Text(doing or "idle", style="cyan" if doing else "dim"))
    table.add_row("best", Text(_best_text(s), style="green"))
    floor = f"  floor {format_score(s.floor)}" if s.floor is not None else ""
    spark = Text(sparkline(s.scores, s.direction), style="green")
    table.add_row("scores", spark + Text(f"  {len(s.scores)} scored{floor}", style="dim"))
    for name, used, drawn in _budget_rows(s):
        table.add_row(name, Text(drawn or " " * (BAR_WIDTH + 5), style="blue") + Text(f"  {used}"))
    if s.failures:
        table.add_row("failures", Text(", ".join(f"{k} {v}" for k, v in s.failures.most_common()), style="red"))
    return Group(table)


def lines(s: Snapshot, width: int | None = None) -> list[str]:
    """The same view as plain lines, for a log; the best node's title cut to fit ``width``."""
    scored = f"; {len(s.scores)} scored"
    room = None if width is None else width - len("best ") - len(scored)
    out = [f"best {_best_text(s, room)}{scored}"]
    out.append("; ".join(f"{name} {used}" for name, used, _ in _budget_rows(s)))
    if s.failures:
        out.append("failures: " + ", ".join(f"{k} {v}" for k, v in s.failures.most_common()))
    return out
