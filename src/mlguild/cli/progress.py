"""Live progress of a run: a line per finished node, and under them a live board (what each
worker does, the best node, a score sparkline, budget bars, failures; mlguild.view.terminal)
on a terminal; on a pipe, or with --quiet, the board's plain lines after each node instead."""

from __future__ import annotations

import time
from collections import Counter

from rich.cells import cell_len
from rich.live import Live
from rich.markup import render

from ..core.graph import Node
from ..core.score import Score, format_score
from ..core.vocabulary import Event, Op, Status
from ..run.session import Session
from ..run.workers import current_worker
from ..scoring.floors import floors
from ..view.terminal import Snapshot, board, lines
from .common import console, plain, short_parents

_OK = frozenset(Status)  # every other status is a failure class


class Progress:
    """Renders a session's events. The board is a renderable recomputed on every refresh."""

    def __init__(self, session: Session, quiet: bool = False):
        self.session = session
        self.live_view = console.is_terminal and not quiet
        self.live: Live | None = None
        self.workers: dict[int, str] = {k + 1: "" for k in range(session.run.config.search.workers)}
        self.scores = [n.score for n in session.state.graph if n.ok and n.score is not None]  # a resumed run's too
        self.floor = next(iter(floors(session.run.journal.records)), None)
        self._seen, self.tokens, self.cost = 0, 0, 0.0  # LLM calls read so far from the journal
        best = session.state.best_id
        self.best_score = session.state.graph[best].score if best else None  # the score last announced best

    def snapshot(self) -> Snapshot:
        a = self.session
        records = a.run.journal.records
        for rec in records[self._seen :]:
            if rec["type"] == Event.LLM_CALL:
                self.tokens += int(rec.get("input_tokens") or 0) + int(rec.get("output_tokens") or 0)
                self.cost += float(rec.get("cost_usd") or 0.0)
        self._seen = len(records)
        best = a.state.graph[a.state.best_id] if a.state.best_id else None
        cfg = a.run.config
        return Snapshot(
            metric=a.scorers.holdout.metric.name,
            direction=str(a.scorers.holdout.metric.direction),
            workers=dict(self.workers),
            best=(best.id, best.score, best.title) if best is not None and best.score is not None else None,
            best_pooled=best is not None and best.holdout_score is not None,
            scores=list(self.scores),
            floor=self.floor,
            spent_s=a.state.spent_s + a.clock.elapsed(),
            time_s=cfg.budget.time_s,
            nodes=sum(1 for n in a.state.graph if n.op not in (Op.REFIT, Op.EDA)),
            iterations=cfg.budget.iterations,
            tokens=self.tokens,
            max_tokens=cfg.llm.max_tokens_total,
            cost_usd=self.cost,
            max_cost_usd=cfg.llm.max_cost_usd,
            failures=Counter(n.status for n in a.state.graph if n.status not in _OK),
        )

    def __rich__(self):
        return board(self.snapshot())

    def __enter__(self) -> Progress:
        if self.live_view:
            self.live = Live(self, console=console, refresh_per_second=2, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def __call__(self, kind: str, data: dict) -> None:
        # Events come from the thread of the worker that made them (mlguild.run.workers).
        if kind == "warning":
            console.print(f"[yellow]warning:[/] {plain(data['message'])}")
        elif kind == "node_proposing":
            self.workers[current_worker()] = f"{data['op']} {data['id']}: {data['reason']}"
        elif kind == Event.NODE_FINISHED:
            node = data["node"]
            if node.ok and node.score is not None:
                self.scores.append(node.score)
            console.print(self._node_line(node, data["best"] if data["is_best"] else None))
            if not self.live_view:  # logs, CI and --quiet: the board as plain lines now and then
                for text in lines(self.snapshot(), console.width):
                    console.print(plain(text))
            self.workers[current_worker()] = ""

    def _node_line(self, node: Node, new_best: str | None) -> str:
        """One finished node in a line that fits the console (80 columns: the title gives way).
        ``new_best``: the best node, when this node's finish changed it. Only a node that is
        itself the best with a strictly better score is a ``★ new best``; a re-run that
        promotes (or a failed one that demotes) another node by its mean over seeds says so."""
        mark = ""
        if new_best is not None:
            best = self.session.state.graph[new_best]
            direction = self.session.scorers.holdout.metric.direction
            before = Score(self.best_score, direction)
            if new_best == node.id and Score(best.score, direction).better_than(before):
                mark = " [bold green]★ new best[/]"
            else:
                mark = f" [green]→ best {plain(best.id)}[/]"  # promoted (or demoted) by seed means
            self.best_score = best.score
        flags = "".join(f" [yellow]⚠ {plain(flag)}[/]" for flag in node.flags)
        parent = short_parents(node.parents) if node.parents else ""
        head = (
            f"{time.strftime('%H:%M:%S')} {node.id} {node.op:<7} {parent:<7} {node.status:<8} "
            f"{format_score(node.score) + (' p' if node.holdout_score is not None else ''):>8} "  # p: pooled
            f"{node.timing.get('exec_s', 0):5.1f}s "
        )
        what = node.title or node.meta.get("recipe") or node.meta.get("summary") or ""  # an LLM's words
        shown = lambda markup: cell_len(render(markup).plain)
        below = ""  # flags that do not fit go on a line of their own, under the node's id
        if shown(head) + shown(mark) + shown(flags) > console.width:
            below, flags = "\n" + " " * 8 + flags, ""
        room = console.width - shown(head) - shown(mark + flags)
        if cell_len(what) > room:
            what = what[: room - 1] + "…" if room > 4 else ""
        return f"{plain(head)}{plain(what)}{mark}{flags}{below}"
