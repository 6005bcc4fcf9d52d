"""A run's report: ``report.html`` (self-contained, its plots embedded as SVG, nothing loaded
from the network) and ``report.md`` (the same facts as a Markdown summary), in the run folder.

It is written at the end of every run and by ``mlguild report RUN``, from the journal alone
(``view.runs``): the task, the budget used, the best node and the lineage that reached it,
score over time, the outcome of each operation, the top nodes, failures, LLM cost, the floor,
the final choice and the test grade, and what ``mlguild status`` shows of its standing (the
baseline ladder, the autonomy count, the resources line: ``view.status.run_standing``). The plots need matplotlib (the ``web`` extra); without
it the report is written without them and says how to get them.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.graph import Node
from ..core.score import format_score
from ..final.confirm import confirmation_line
from ..util.fs import atomic_write
from . import report_plots
from .importance import final_importance
from .runs import RunView, load_run, pools
from .status import autonomy_words, resources_words, run_standing

TOP_K = 10
HTML_NAME, MD_NAME = "report.html", "report.md"


@dataclass
class Written:
    files: list[Path] = field(default_factory=list)
    note: str = ""  # what the report lacks and why (no matplotlib: no plots)


def write_report(run_dir: Path) -> Written:
    """Write ``report.html`` and ``report.md`` into ``run_dir``; return what was written."""
    view = load_run(run_dir)
    facts = _facts(view)
    plots, note = report_plots.plots(view)
    atomic_write(run_dir / MD_NAME, _markdown(view, facts))
    atomic_write(run_dir / HTML_NAME, _html(view, facts, plots, note))
    return Written([run_dir / HTML_NAME, run_dir / MD_NAME], note)


# ------------------------------------------------------------------ the facts


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "no limit"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _facts(view: RunView) -> dict[str, Any]:
    graph = view.state.graph
    sign = 1.0 if view.direction == "maximize" else -1.0
    scored = [n for n in graph if n.ok]
    top = sorted(scored, key=lambda n: (-sign * (n.score or 0.0), n.iteration))[:TOP_K]
    new_bests = {node_id for _, node_id in view.best_changes}
    failures = view.failures()
    ops: dict[str, Counter[str]] = {}
    for n in graph:
        row = ops.setdefault(n.op, Counter())
        row["nodes"] += 1
        row["scored" if n.ok else ("failed" if n.status in failures else n.status)] += 1
        parent = graph.nodes.get(n.parents[0]) if n.parents else None
        if n.ok and parent is not None and parent.ok and sign * ((n.score or 0) - (parent.score or 0)) > 0:
            row["beat its parent"] += 1
        if n.id in new_bests:
            row["new best"] += 1
    lineage = [graph[i] for i in reversed(view.lineage())]
    lineage.sort(key=lambda n: n.iteration)
    examples: dict[str, str] = {}
    for n in graph:
        if n.status in failures and n.failure and n.status not in examples:
            examples[n.status] = n.failure.strip().splitlines()[-1][:200]
    by_model: dict[str, list[float]] = {}
    for c in view.calls:
        row2 = by_model.setdefault(str(c.get("model", "")), [0, 0, 0.0])
        row2[0] += 1
        row2[1] += int(c.get("input_tokens") or 0) + int(c.get("output_tokens") or 0)
        row2[2] += float(c.get("cost_usd") or 0.0)
    best = graph[view.state.best_id] if view.state.best_id else None
    return {
        "best": best,
        "top": top,
        "ops": ops,
        "lineage": lineage,
        "failures": failures,
        "examples": examples,
        "by_model": by_model,
        "budget": view.budget(),
        "standing": run_standing(view.path, str(view.spec.get("metric", "")), view.state, view.records),
    }


def _summary_rows(view: RunView, facts: dict[str, Any]) -> list[tuple[str, str]]:
    b, best = facts["budget"], facts["best"]
    grade = view.state.final_grade or {}
    final = view.state.final_choice or {}
    rows = [
        (
            "task",
            f"{view.spec.get('name', '')} ({view.spec.get('task_type', '')}, metric {view.spec.get('metric', '')}, {view.direction})",
        ),
        ("brain", view.brain()),
        ("time used", f"{_clock(b['spent_s'])} of {_clock(b['time_s'])}"),
        ("nodes", f"{b['nodes']}" + (f" of {b['iterations']}" if b["iterations"] else "")),
        ("LLM", f"{len(view.calls)} calls, {b['tokens']:,} tokens, ${b['cost_usd']:.4f}"),
        ("resources", resources_words(facts["standing"]["resources"])),
        ("autonomy (every human touch is an intervention)", autonomy_words(facts["standing"]["autonomy"])),
        ("floor (constant prediction, holdout)", format_score(view.floor)),
        (
            "best (pooled: holdout and out-of-fold)" if best and best.holdout_score is not None else "best (holdout)",
            f"{best.id} {format_score(best.score)}: {best.title}" if best else "—",
        ),
        ("final submission", f"{final.get('node')}: {final.get('reason')}" if final else "—"),
        ("holdout against confirmation (selection bias)", confirmation_line(final) or "—"),
        (
            "test grade (once, sealed answers)",
            format_score(grade.get("test_score")) if grade else "— (no test answers, or not finished)",
        ),
        ("last stop", view.state.finished_reason or "running or killed"),
    ]
    novelty = _novelty(**pools(view))
    if novelty:
        rows.insert(-1, ("novelty (against the community's ideas and code)", novelty))
    return rows


def _novelty(ideas: list[dict], reports: list[dict]) -> str:
    """How much of the run came from the community: attempts that used a community idea, and
    the largest share of a script found in one knowledge item's code (mlguild.pools.novelty)."""
    reports = [r for r in reports if not r.get("run")]  # this run's own, not an earlier run's
    if not reports:
        return ""
    community = {i.get("id") for i in ideas if i.get("origin") == "community"}
    used = sum(1 for r in reports if community & set(r.get("ideas") or ()))
    parts = [f"{used} of {len(reports)} attempts used a community idea"]
    measured = [r for r in reports if r.get("overlap") is not None]
    if measured:
        top = max(measured, key=lambda r: r["overlap"])
        copies = sum(bool(r.get("near_copy")) for r in measured)
        parts.append(
            f"at most {top['overlap']:.0%} of a script is one community item's code "
            f"({top['node']}, item {top['overlap_item']}); near-copies: {copies}"
        )
    return "; ".join(parts)


# ------------------------------------------------------------------ Markdown


def _score(node: Node) -> str:
    """A node's score as the search ranked it, named as pooled where it is."""
    return format_score(node.score) + (" (pooled)" if node.holdout_score is not None else "")


def _ladder_rows(facts: dict[str, Any]) -> list[list[object]]:
    """The baseline ladder's rungs (mlguild.final.ladder): score, share of the headroom, what."""
    share = lambda x: f"{100 * x:.1f}%" if x is not None else "—"
    return [
        [
            r["rung"],
            _fmt(r["score"]),
            share(r.get("headroom")),
            share(r.get("gained")),
            " ".join(x for x in (r.get("node") or "", r.get("what") or "") if x) or "—",
        ]
        for r in facts["standing"]["ladder"]["rungs"]
    ]


LADDER_HEADERS = ["rung", "holdout", "headroom", "gained", "node, what"]
LADDER_NOTE = "Each rung's share of the headroom from the floor to the ceiling, and what it adds over the rung below."


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(headers: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def _op_rows(facts: dict[str, Any]) -> list[list[object]]:
    cols = ("nodes", "scored", "failed", "beat its parent", "new best")
    return [[op, *(row[c] for c in cols)] for op, row in sorted(facts["ops"].items(), key=lambda kv: -kv[1]["nodes"])]


def _markdown(view: RunView, facts: dict[str, Any]) -> str:
    lines = [f"# Run {view.id}", ""]
    lines += _md_table(["", ""], [[k, v] for k, v in _summary_rows(view, facts)])
    lines += ["", "## Baseline ladder", "", LADDER_NOTE, ""]
    lines += _md_table(LADDER_HEADERS, _ladder_rows(facts))
    lines += ["", "## The best node's lineage", ""]
    lines += (
        _md_table(
            ["node", "op", "parents", "holdout", "title"],
            [[n.id, n.op, ",".join(n.parents) or "—", _score(n), n.title] for n in facts["lineage"]],
        )
        if facts["lineage"]
        else ["No node was scored."]
    )
    lines += ["", "## Outcome per operation", ""]
    lines += _md_table(["op", "nodes", "scored", "failed", "beat its parent", "new best"], _op_rows(facts))
    lines += ["", f"## Top {TOP_K}", ""]
    lines += _md_table(
        ["node", "op", "worker", "holdout", "run s", "title"],
        [
            [n.id, n.op, view.worker.get(n.id, 1), _score(n), _fmt(n.timing.get("exec_s")), n.title]
            for n in facts["top"]
        ],
    )
    whose, importance = final_importance(view)
    if importance:
        lines += ["", "## Feature importance", "", f"The final model's largest ({whose}):", ""]
        lines += _md_table(["feature", "importance"], [[name, f"{value:.4f}"] for name, value in importance[:10]])
    lines += ["", "## Failures", ""]
    lines += (
        _md_table(
            ["class", "nodes", "last line of one"],
            [[k, v, facts["examples"].get(k, "")] for k, v in facts["failures"].most_common()],
        )
        if facts["failures"]
        else ["No node failed."]
    )
    if facts["by_model"]:
        lines += ["", "## LLM cost", ""]
        lines += _md_table(
            ["model", "calls", "tokens", "USD"],
            [[m, c, f"{t:,}", f"{u:.4f}"] for m, (c, t, u) in facts["by_model"].items()],
        )
    lines += ["", "Scores are the harness's, on the sealed holdout; `report.html` has the plots.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ HTML

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;color:#1d2430;max-width:1100px;margin:24px auto;padding:0 16px}
table{border-collapse:collapse;margin:8px 0 18px}th,td{border-bottom:1px solid #d9dde3;padding:4px 10px;text-align:left;vertical-align:top}
th{color:#6b7280;font-size:12px;text-transform:uppercase}td.num{text-align:right}.plot svg{max-width:100%;height:auto}
h2{font-size:17px;margin-top:26px}.note{color:#9a6700}
"""


def _table(headers: list[str], rows: list[list[object]], table_id: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if isinstance(c, int | float) else ''}>{html.escape(str(c))}</td>" for c in row)
        + "</tr>"
        for row in rows
    )
    attr = f' id="{table_id}"' if table_id else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html(view: RunView, facts: dict[str, Any], plots: list[tuple[str, str]], note: str) -> str:
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>mlguild report: {html.escape(view.id)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Run {html.escape(view.id)}</h1>",
        _table(["", ""], [[k, v] for k, v in _summary_rows(view, facts)], "summary"),
    ]
    parts.append(f"<h2>Baseline ladder</h2><p>{html.escape(LADDER_NOTE)}</p>")
    parts.append(_table(LADDER_HEADERS, _ladder_rows(facts), "ladder"))
    if note:
        parts.append(f"<p class=note>{html.escape(note)}</p>")
    for title, svg in plots:
        slug = re.sub(r"[^a-z]+", "-", title.lower()).strip("-")
        parts.append(f'<h2>{html.escape(title)}</h2><div class=plot id="plot-{slug}">{svg}</div>')
    parts.append("<h2>The best node's lineage</h2>")
    parts.append(
        _table(
            ["node", "op", "parents", "holdout", "title"],
            [[n.id, n.op, ",".join(n.parents) or "—", _score(n), n.title] for n in facts["lineage"]],
            "lineage",
        )
        if facts["lineage"]
        else "<p>No node was scored.</p>"
    )
    parts.append("<h2>Outcome per operation</h2>")
    parts.append(_table(["op", "nodes", "scored", "failed", "beat its parent", "new best"], _op_rows(facts), "ops"))
    parts.append(f"<h2>Top {TOP_K}</h2>")
    parts.append(
        _table(
            ["node", "op", "worker", "holdout", "run s", "title"],
            [
                [n.id, n.op, view.worker.get(n.id, 1), _score(n), _fmt(n.timing.get("exec_s")), n.title]
                for n in facts["top"]
            ],
            "top",
        )
    )
    parts.append("<h2>Failures</h2>")
    parts.append(
        _table(
            ["class", "nodes", "last line of one"],
            [[k, v, facts["examples"].get(k, "")] for k, v in facts["failures"].most_common()],
            "failures",
        )
        if facts["failures"]
        else "<p>No node failed.</p>"
    )
    if facts["by_model"]:
        parts.append("<h2>LLM cost</h2>")
        parts.append(
            _table(
                ["model", "calls", "tokens", "USD"],
                [[m, c, t, round(u, 4)] for m, (c, t, u) in facts["by_model"].items()],
            )
        )
    parts.append(
        "<p>Scores are the harness's, on the sealed holdout. Written by mlguild from the run's journal.</p></body></html>"
    )
    return "\n".join(parts)
