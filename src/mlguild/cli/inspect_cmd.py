"""`mlguild status` and `mlguild show`: read-only views of a run directory."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.syntax import Syntax
from rich.table import Table

from ..core.errors import RunError
from ..core.graph import SearchGraph
from ..core.vocabulary import Status
from ..llm.ledger import Ledger
from ..metrics import get_metric
from ..run.folder import check_run_dir
from ..run.journal import read_journal
from ..run.replay import replay
from ..task.folder import TaskSpec
from .common import console, default_runs_dir, plain, resolve_run, user_errors


def _load(run: str | None, runs_dir: Path | None):
    path = resolve_run(run, runs_dir or default_runs_dir()).expanduser().absolute()
    check_run_dir(path)
    try:
        spec = TaskSpec.model_validate(json.loads((path / "task.json").read_text())["spec"])
    except (OSError, ValueError, KeyError) as exc:
        raise RunError(
            f"{path}/task.json is missing or damaged: {exc}", "start a new run with `mlguild run TASK`"
        ) from exc
    state = replay(read_journal(path / "journal.jsonl"), get_metric(spec.metric).direction)
    return path, spec, state


def status(
    run: str | None = typer.Argument(None, help="Run directory (default: the latest)."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
) -> None:
    """A table of the run's nodes: op, parent, status, holdout score, time."""
    with user_errors():
        path, spec, state = _load(run, runs_dir)
        best = state.best_id
        records = read_journal(path / "journal.jsonl")
        # Kaggle's public leaderboard scores of submitted nodes: shown, never used by the search.
        public = {r["node"]: r.get("public_score") for r in records if r["type"] == "kaggle_scored"}
        headers = ["node", "op", "parent", "status", f"holdout {spec.metric}", "printed (untrusted)"]
        headers += ["public LB"] if public else []
        table = Table(*headers, "run s", "what")
        for node in state.graph:
            score = f"{node.score:.6g}" if node.score is not None else "—"
            printed = f"{node.printed_score:.6g}" if node.printed_score is not None else ""
            style = (
                "bold green"
                if node.id == best
                else ("red" if node.status not in (Status.SCORED, Status.PENDING, Status.FINAL_OK) else None)
            )
            what = (
                node.title
                or node.meta.get("recipe")
                or node.meta.get("summary")
                or (f"refit of {node.meta['refit_of']}" if node.meta.get("refit_of") else "")
            )
            table.add_row(
                plain(node.id) + (" ★" if node.id == best else ""),
                plain(node.op),
                plain(",".join(node.parents) or "—"),
                plain(node.status),
                score,
                printed,
                *([_public(public, node.id)] if public else []),
                f"{node.timing.get('exec_s', 0):.1f}",
                plain(str(what)[:40] + "".join(f" ⚠{f}" for f in node.flags)),
                style=style,
            )
        console.print(f"run {plain(path)}")
        console.print(
            f"task {plain(spec.name)}: {spec.task_type}, metric {spec.metric}; sessions {state.sessions}; "
            f"time spent {state.spent_s:.0f} s; last stop: {plain(state.finished_reason or 'running or killed')}"
        )
        console.print(table)
        groups = state.graph.rerun_groups()
        noise = state.graph.noise_floor(groups)
        if noise is not None:
            reruns = sum(len(g) for g in groups.values())
            console.print(
                f"noise floor (seed spread of {spec.metric}): {noise:.4g}, from {reruns} re-runs of {len(groups)} nodes"
            )
        else:
            console.print("noise floor: not measured yet (no node has been re-run with another seed)")
        _pools_line(path, state.graph)
        calls = [r for r in records if r["type"] == "llm_call"]
        if calls:
            console.print("LLM spend: " + Ledger.from_records(calls).summary(), markup=False)
        if state.final_choice:
            c = state.final_choice
            console.print(
                f"final submission: node {plain(c['node'])} ({plain(c['reason'])}) → {plain(path / 'final' / 'submission.csv')}"
            )
        if state.final_grade:
            g = state.final_grade
            console.print(
                f"final test grade ({spec.metric}, node {plain(g['node'])}, graded once): {g.get('test_score')}"
            )


def _pools_line(path: Path, graph: SearchGraph) -> None:
    """The pools: how many reports and ideas, and the novelty share (attempts that used a
    community idea against those that did not)."""
    from ..pools import Pools
    from ..pools.store import FILE

    if not (path / FILE).is_file():
        return
    pools = Pools.open(path)
    try:
        used, reported = pools.novelty(graph)
        ideas = pools.ideas.all()
        community = sum(1 for i in ideas if i.origin == "community")
        reports = len(pools.store.keys("reports"))
    finally:
        pools.close()
    share = f"{used}/{reported} ({100 * used / reported:.0f}%)" if reported else "—"
    console.print(
        f"pools: {reports} reports; {len(ideas)} ideas ({community} from the community, {len(ideas) - community} from reports); "
        f"attempts that used a community idea: {share}, the rest new"
    )


def _public(public: dict, node_id: str) -> str:
    if node_id not in public:
        return ""
    score = public[node_id]
    return f"{score:.6g}" if score is not None else "error"


def show(
    node_id: str = typer.Argument(..., help="Node id, e.g. n0003 (or 'best')."),
    run: str | None = typer.Option(None, "--run", "-r", help="Run directory (default: the latest)."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
    lines: int = typer.Option(30, help="Output lines to show."),
    code: bool = typer.Option(False, "--code", help="Print the whole solution.py too (by default only its path)."),
) -> None:
    """One node: plan, output tail and score; its code with --code."""
    with user_errors():
        path, spec, state = _load(run, runs_dir)
        if node_id == "best":
            if not state.best_id:
                raise RunError("this run has no scored node yet", f"see `mlguild status {path}`")
            node_id = state.best_id
        if node_id not in state.graph.nodes:
            raise RunError(f"no node {node_id} in {path}", f"list nodes with `mlguild status {path}`")
        node = state.graph[node_id]
        node_dir = path / "nodes" / node_id
        read = lambda name: (node_dir / name).read_text(errors="replace") if (node_dir / name).exists() else ""
        console.rule(plain(f"{node_id}: {node.op} of {','.join(node.parents) or '—'} — {node.status}"))
        if node.title:
            console.print(plain(node.title), style="bold")
        console.print(read("plan.md").strip(), markup=False)
        script = read("solution.py")
        if code:
            console.rule("solution.py")
            console.print(Syntax(script, "python", line_numbers=True))
        else:  # a whole script pushes the plan and the score off the first screen
            console.print(
                plain(f"solution.py: {len(script.splitlines())} lines, {node_dir / 'solution.py'} (--code prints it)")
            )
        for name in ("stdout.txt", "stderr.txt"):
            tail = read(name).splitlines()[-lines:]
            if tail:
                console.rule(f"{name} (last {len(tail)} lines)")
                console.print("\n".join(tail), markup=False)
        console.rule("score")
        console.print(
            f"holdout {spec.metric}: {node.score if node.score is not None else '—'} (harness, sealed labels)",
            markup=False,
        )
        console.print(
            f"printed by the script: {node.printed_score if node.printed_score is not None else '—'} (not trusted)",
            markup=False,
        )
        if node.failure:
            console.print(f"failure: {node.failure}", markup=False)
