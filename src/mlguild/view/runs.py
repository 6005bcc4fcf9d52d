"""What the views show of a run, read from its folder without writing anything.

Every view (the dashboard, the report, the live terminal view) reads a run through this
module: the journal replayed by ``state.replay``, plus the journal's own times, workers and
LLM calls, and the node files named by node ids the journal knows (never a path a caller
made up). Nothing here reads ``sealed/``. A ``RunView`` is cached by its journal's size and
modification time, so a dashboard polling a big run parses its journal only when it grew.
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import re
import sqlite3
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import RunError
from ..core.graph import Node
from ..core.vocabulary import Event, Op, Status
from ..metrics import get_metric
from ..rundir.journal import read_journal
from ..rundir.replay import RunState, replay
from ..scoring.floors import floors
from ..util.fs import read_text_no_follow

JOURNAL = "journal.jsonl"
TAIL_LINES = 60  # lines of a node's stdout and stderr a node page shows
_OK_STATUSES = (
    Status.SCORED,
    Status.PENDING,
    Status.FINAL_OK,
    Status.EXPLORED,
)  # every other status is a failure class
_NODE_ID = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class RunView:
    """One run as the views see it: the replayed state plus what the journal says about when,
    by which worker and at what LLM cost each node ran."""

    path: Path
    records: list[dict[str, Any]]
    state: RunState
    spec: dict[str, Any]
    config: dict[str, Any]
    version: str  # changes whenever the journal does
    started: dict[str, float] = field(default_factory=dict)  # node id -> ts of its node_started
    finished: dict[str, float] = field(default_factory=dict)  # node id -> ts of its node_finished
    worker: dict[str, int] = field(default_factory=dict)
    recall: dict[str, list[str]] = field(default_factory=dict)
    cost: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # node id -> LLM USD
    tokens: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))  # node id -> LLM tokens
    calls: list[dict[str, Any]] = field(default_factory=list)  # the llm_call records
    best_changes: list[tuple[float, str]] = field(default_factory=list)  # (ts, node id)
    public: dict[str, Any] = field(default_factory=dict)  # node id -> Kaggle public score

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def direction(self) -> str:
        return str(self.state.graph.direction)

    @property
    def floor(self) -> float | None:
        found = floors(self.records)
        return found[0] if found else None

    def node_dir(self, node_id: str) -> Path:
        # Only an id the journal knows, and a plain name, makes a path.
        if node_id not in self.state.graph.nodes or not _NODE_ID.fullmatch(node_id):
            raise KeyError(node_id)
        return self.path / "nodes" / node_id

    def read(self, node_id: str, name: str) -> str:
        return read_text_no_follow(self.node_dir(node_id) / name)

    def lineage(self) -> list[str]:
        """The best node and every node it descends from (all parents of a fuse or blend)."""
        best = self.state.best_id
        seen: list[str] = []
        stack = [best] if best else []
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in self.state.graph.nodes:
                continue
            seen.append(node_id)
            stack.extend(self.state.graph[node_id].parents)
        return seen

    def failures(self) -> Counter[str]:
        return Counter(n.status for n in self.state.graph if n.status not in _OK_STATUSES)

    def budget(self) -> dict[str, Any]:
        """The budget given and what of it is spent: time, nodes, LLM tokens and cost."""
        budget = self.config.get("budget", {}) or {}
        llm = self.config.get("llm", {}) or {}
        return {
            "time_s": budget.get("time_s"),
            "spent_s": round(self.state.spent_s, 1),
            "iterations": budget.get("iterations"),
            "nodes": sum(1 for n in self.state.graph if n.op not in (Op.REFIT, Op.EDA)),
            "tokens": sum(self.tokens.values()),
            "max_tokens": llm.get("max_tokens_total"),
            "cost_usd": round(sum(self.cost.values()), 4),
            "max_cost_usd": llm.get("max_cost_usd"),
        }

    def brain(self) -> str:
        brain = self.config.get("brain", {}) or {}
        models = (self.config.get("llm", {}) or {}).get("models") or []
        name = str(brain.get("name", "auto"))
        return f"{name} ({', '.join(models)})" if models else name

    def final_score(self) -> float | None:
        grade = self.state.final_grade or {}
        return grade.get("test_score")

    def confirmations(self, node_id: str) -> list[float]:
        """The scores of the re-runs that confirmed (or not) a node with other seeds."""
        return [r.score for r in self.state.graph.rerun_groups().get(node_id, []) if r.score is not None]


_CACHE: dict[Path, RunView] = {}
_CACHE_LOCK = threading.Lock()


def _version(journal: Path) -> str:
    stat = journal.stat()
    return f"{stat.st_size}-{stat.st_mtime_ns}"


def journal_version(path: Path) -> str:
    """A token that changes whenever the run's journal does (what a live view polls)."""
    try:
        return _version(path / JOURNAL)
    except OSError:
        return ""


def load_run(path: Path) -> RunView:
    """The run at ``path``, read from its journal (cached until the journal changes). A
    RunError when ``path`` is not a run folder, or its task snapshot is damaged."""
    path = path.absolute()
    journal = path / JOURNAL
    try:
        version = _version(journal)
    except OSError:
        raise RunError(f"{path} is not a run folder (no {JOURNAL})", "list runs with `ls runs/`") from None
    with _CACHE_LOCK:
        cached = _CACHE.get(path)
    if cached is not None and cached.version == version:
        return cached
    view = _build(path, version)
    with _CACHE_LOCK:
        _CACHE[path] = view
    return view


def _build(path: Path, version: str) -> RunView:
    try:
        spec = json.loads((path / "task.json").read_text())["spec"]
        direction = get_metric(spec["metric"]).direction
    except (OSError, ValueError, KeyError) as exc:
        raise RunError(
            f"{path}/task.json is missing or damaged: {exc}", "start a new run with `mlguild run TASK`"
        ) from exc
    try:
        config = yaml.safe_load((path / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    records = read_journal(path / JOURNAL)
    view = RunView(path, records, replay(records, direction), spec, config, version)
    for rec in records:
        kind = rec["type"]
        if kind == Event.NODE_STARTED:
            data = rec["node"]
            view.started.setdefault(data["id"], rec["ts"])
            view.worker.setdefault(data["id"], int(data.get("worker", 1)))
            if data.get("recall"):
                view.recall[data["id"]] = list(data["recall"])
        elif kind == Event.NODE_FINISHED:
            view.finished[rec["id"]] = rec["ts"]
        elif kind == Event.LLM_CALL:
            view.calls.append(rec)
            view.cost[rec.get("node", "")] += float(rec.get("cost_usd") or 0.0)
            view.tokens[rec.get("node", "")] += int(rec.get("input_tokens") or 0) + int(rec.get("output_tokens") or 0)
        elif kind == Event.BEST_CHANGED:
            view.best_changes.append((rec["ts"], rec["id"]))
        elif kind == Event.KAGGLE_SCORED:
            view.public[rec["node"]] = rec.get("public_score")
    return view


def list_runs(runs_dir: Path) -> list[RunView]:
    """Every complete run folder directly in ``runs_dir``, newest first; a damaged one is left out."""
    views = []
    try:
        entries = list(runs_dir.iterdir())
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(".") or not (entry / JOURNAL).is_file():
            continue  # hidden: a run being built (.<id>.partial)
        try:
            views.append(load_run(entry))
        except (RunError, OSError):
            continue
    return sorted(views, key=lambda v: v.records[0]["ts"] if v.records else 0.0, reverse=True)


def node_summary(view: RunView, node: Node) -> dict[str, Any]:
    """One node as the graph and the tables show it."""
    return {
        "id": node.id,
        "op": node.op,
        "parents": list(node.parents),
        "title": node.title,
        "status": node.status,
        "score": node.score,
        "holdout_score": node.holdout_score,  # not null: ``score`` is the pooled score (a small holdout)
        "failure": _last_line(node.failure),
        "worker": view.worker.get(node.id, 1),
        "branch": node.branch,
        "started": view.started.get(node.id),
        "finished": view.finished.get(node.id),
        "exec_s": node.timing.get("exec_s"),
        "cost_usd": round(view.cost.get(node.id, 0.0), 6),
        "flags": node.flags,
    }


def run_summary(view: RunView) -> dict[str, Any]:
    """A run in the runs list: task, brain, budget used, best and final scores."""
    best = view.state.graph[view.state.best_id] if view.state.best_id else None
    return {
        "id": view.id,
        "task": view.spec.get("name", ""),
        "metric": view.spec.get("metric", ""),
        "direction": view.direction,
        "brain": view.brain(),
        "budget": view.budget(),
        "best": {"id": best.id, "score": best.score, "title": best.title, "pooled": best.holdout_score is not None}
        if best
        else None,
        "final": view.state.final_choice,
        "final_score": view.final_score(),
        "floor": view.floor,
        "started": view.records[0]["ts"] if view.records else None,
        "stopped": view.state.finished_reason,
        "version": view.version,
    }


def run_detail(view: RunView) -> dict[str, Any]:
    """Everything a run's page draws: the nodes, the best lineage, failures, LLM use over time."""
    scores = {n.id: n.score for n in view.state.graph}
    return {
        **run_summary(view),
        "nodes": [node_summary(view, n) for n in view.state.graph],
        "lineage": view.lineage(),
        "failures": dict(view.failures().most_common()),
        "best_changes": [{"ts": ts, "id": i, "score": scores.get(i)} for ts, i in view.best_changes],
        "llm": [
            {
                "ts": c["ts"],
                "tokens": int(c.get("input_tokens") or 0) + int(c.get("output_tokens") or 0),
                "cost_usd": float(c.get("cost_usd") or 0.0),
                "model": c.get("model", ""),
                "node": c.get("node", ""),
            }
            for c in view.calls
        ],
        "workers": sorted(set(view.worker.values())) or [1],
    }


def node_detail(view: RunView, node_id: str) -> dict[str, Any]:
    """A node's page: plan, code, a diff against each parent, output tails, scores, timings, cost."""
    node = view.state.graph[node_id]  # KeyError: no such node
    code = view.read(node_id, "solution.py")
    diffs = []
    for parent in node.parents:
        if parent in view.state.graph.nodes:
            old = view.read(parent, "solution.py")
            lines = difflib.unified_diff(
                old.splitlines(), code.splitlines(), f"{parent}/solution.py", f"{node_id}/solution.py", lineterm=""
            )
            diffs.append({"parent": parent, "diff": "\n".join(lines)})
    return {
        **node_summary(view, node),
        "plan": view.read(node_id, "plan.md") or node.plan,
        "code": code,
        "diffs": diffs,
        "stdout": _tail(view.read(node_id, "stdout.txt")),
        "stderr": _tail(view.read(node_id, "stderr.txt")),
        "failure_full": node.failure,
        "printed_score": node.printed_score,
        "confirmations": view.confirmations(node_id),
        "public_score": view.public.get(node_id),
        "timing": node.timing,
        "tokens": view.tokens.get(node_id, 0),
        "recall": view.recall.get(node_id, []),
        "meta": node.meta,
        "children": [n.id for n in view.state.graph if node_id in n.parents],
        "is_best": node_id == view.state.best_id,
        "report": view.read(node_id, "report.md"),
        "importance": [  # output/importance.csv, largest first, names cut to fit the bar chart
            (name if len(name) <= 24 else name[:23] + "…", round(value, 4))
            for name, value in read_importance(view.node_dir(node_id))
        ],
    }


IMPORTANCE = Path("output") / "importance.csv"  # optional in the script contract; the recipes write it


def read_importance(node_dir: Path, limit: int = 20) -> list[tuple[str, float]]:
    """The ``limit`` largest (feature, importance) pairs a node wrote, largest first; none when
    it wrote no importance.csv or an unreadable one. Only shown: nothing is chosen by it."""
    try:
        with (node_dir / IMPORTANCE).open(newline="") as handle:
            rows = [(str(r["feature"]), float(r["importance"])) for r in csv.DictReader(handle)]
    except (OSError, KeyError, ValueError, TypeError, csv.Error):
        return []
    return sorted([r for r in rows if math.isfinite(r[1])], key=lambda r: -r[1])[:limit]


def pools(view: RunView) -> dict[str, Any]:
    """The run's idea and report pools, read from ``pools.sqlite`` opened read-only."""
    from ..pools.store import FILE

    path = view.path / FILE
    if not path.is_file():
        return {"ideas": [], "reports": []}
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            ideas = [json.loads(v) for (v,) in db.execute("SELECT value FROM ideas ORDER BY id")]
            reports = [json.loads(v) for (v,) in db.execute("SELECT value FROM reports ORDER BY id")]
        finally:
            db.close()
    except (sqlite3.Error, ValueError):  # a pool being written or from another version: none shown
        return {"ideas": [], "reports": []}
    return {"ideas": ideas, "reports": reports}


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _last_line(text: str | None) -> str | None:
    """A failure's last line: a traceback's says what was raised."""
    return text.strip().splitlines()[-1][:200] if text and text.strip() else None
