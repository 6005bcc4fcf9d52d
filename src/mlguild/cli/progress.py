"""Live progress of a run: a line per finished node and a status line that keeps ticking."""

from __future__ import annotations

import time

from rich.live import Live
from rich.text import Text

from ..run.session import Session
from .common import console, plain


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "∞"
    seconds = max(0, int(seconds))
    return (
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


class Progress:
    """Renders a session's events. The status line is a renderable recomputed on every refresh."""

    def __init__(self, session: Session):
        self.session = session
        self.current = ""
        self.live: Live | None = None

    def __rich__(self) -> Text:
        s = self.session
        best = s.state.graph[s.state.best_id] if s.state.best_id else None
        best_text = f"{best.score:.5g} ({best.id})" if best else "—"
        return Text(
            f"iter {len(s.state.graph)} | best {s.scorers.holdout.metric.name} {best_text} | "
            f"elapsed {_clock(s.state.spent_s + s.clock.elapsed())} | left {_clock(s.clock.remaining_s())} | {self.current}",
            style="dim",
        )

    def __enter__(self) -> Progress:
        if console.is_terminal:
            self.live = Live(self, console=console, refresh_per_second=2, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def __call__(self, kind: str, data: dict) -> None:
        if kind == "warning":
            console.print(f"[yellow]warning:[/] {plain(data['message'])}")
        elif kind == "node_proposing":
            self.current = f"{data['op']} {data['id']}: {data['reason']}"  # shown as a Text: no markup
        elif kind == "node_finished":
            node = data["node"]
            score = f"{node.score:.5g}" if node.score is not None else "—"
            mark = "  [bold green]★ new best[/]" if data["is_best"] else ""
            mark += "".join(f"  [yellow]⚠ {plain(flag)}[/]" for flag in node.flags)
            parent = f" of {','.join(node.parents)}" if node.parents else ""
            what = node.meta.get("recipe") or node.meta.get("summary") or ""  # an LLM's words
            line = f"{time.strftime('%H:%M:%S')} {node.id} {node.op:<7}{parent:<9} {node.status:<14} {score:>10} "
            console.print(f"{plain(line)}{node.timing.get('exec_s', 0):6.1f}s  {plain(what)}{mark}")
            if not console.is_terminal:  # logs and CI: the status line as a plain line now and then
                console.print(self.__rich__().plain)
            self.current = ""
