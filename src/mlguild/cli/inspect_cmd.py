"""`mlguild status` and `mlguild show`: read-only views of a run directory."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.syntax import Syntax

from ..core.errors import ConfigError, RunError
from ..core.graph import SearchGraph
from ..core.score import format_score
from ..core.vocabulary import Event, Status
from ..final.confirm import confirmation_line
from ..final.ladder import ladder_lines
from ..llm.ledger import Ledger
from ..metrics import get_metric
from ..run.node_report import review_lines
from ..rundir.folder import check_run_dir
from ..rundir.journal import read_journal
from ..rundir.replay import replay
from ..task.folder import TaskSpec
from ..view.reviews import reviews_line
from ..view.status import autonomy_line, resources_line, run_standing, status_document
from .common import (
    console,
    default_runs_dir,
    fitted_table,
    plain,
    print_wrapped,
    resolve_run,
    short_parents,
    user_errors,
)


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
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the run as one JSON document for scripts (its keys: docs/guides/review-and-ladder.md).",
    ),
) -> None:
    """A table of the run's nodes: op, parent, status, holdout score, time; then the baseline
    ladder, the autonomy count and the resources spent."""
    with user_errors():
        path, spec, state = _load(run, runs_dir)
        best = state.best_id
        records = read_journal(path / "journal.jsonl")
        if as_json:
            print(json.dumps(status_document(path, spec, state, records), indent=2, default=str))
            return
        # Kaggle's public leaderboard scores of submitted nodes: shown, never used by the search.
        public = {r["node"]: r.get("public_score") for r in records if r["type"] == Event.KAGGLE_SCORED}
        # What each node's script ran on (sandbox/devices): a column once any used a GPU.
        device = {r["id"]: (r.get("exec") or {}).get("device") for r in records if r["type"] == Event.NODE_FINISHED}
        gpu = any(d and d != "cpu" for d in device.values())
        rows, styles = [], []
        for node in state.graph:
            styles.append(
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
            rows.append(
                [
                    plain(node.id) + (" ★" if node.id == best else ""),
                    plain(node.op),
                    plain(short_parents(node.parents)),
                    plain(node.status),
                    format_score(node.score) + (" p" if node.holdout_score is not None else ""),
                    *([_public(public, node.id)] if public else []),
                    *([plain(device.get(node.id) or "")] if gpu else []),
                    f"{node.timing.get('exec_s', 0):.1f}",
                    plain(str(what) + "".join(f" ⚠{f}" for f in node.flags)),
                ]
            )
        # The script's printed score is `show`'s: the table keeps its columns for what the
        # search trusts, and every value but the title whole on 80 columns.
        headers = ["node", "op", "parent", "status", "holdout", *(["public LB"] if public else [])]
        headers += [*(["device"] if gpu else []), "run s", "what"]
        table = fitted_table(headers, rows, console.width, right=("holdout", "public LB", "run s"))
        for row, style in zip(rows, styles, strict=True):
            table.add_row(*row, style=style)
        console.print(f"run {plain(path)}")
        console.print(
            f"task {plain(spec.name)}: {spec.task_type}, holdout metric {spec.metric}\nsessions {state.sessions}; "
            f"time spent {state.spent_s:.0f} s; last stop: {plain(state.finished_reason or 'running or killed')}"
        )
        console.print(table)
        if any(n.holdout_score is not None for n in state.graph):
            print_wrapped(
                f"p: the pooled score, which ranks nodes on a small holdout ({spec.metric} on the holdout and "
                "the out-of-fold rows, weighted by their rows; search.small_holdout_rows)",
                "",
            )
        if not gpu and any(device.values()):
            console.print(f"device: every node's script ran on the cpu ({sum(map(bool, device.values()))} nodes)")
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
        calls = [r for r in records if r["type"] == Event.LLM_CALL]
        if calls:
            console.print("LLM spend: " + Ledger.from_records(calls).summary(), markup=False)
        if state.final_choice:
            c = state.final_choice
            console.print(f"final submission: node {plain(c['node'])} → {plain(path / 'final' / 'submission.csv')}")
            print_wrapped(f"({c['reason']})", "  ")
            if (confirmed := confirmation_line(c)) is not None:
                print_wrapped(confirmed, "  ")
        if state.final_grade:
            g = state.final_grade
            console.print(
                f"final test grade ({spec.metric}, node {plain(g['node'])}, graded once): "
                f"{format_score(g.get('test_score'))}"
            )
        _ladder_and_autonomy(path, spec, state, records)


def _ladder_and_autonomy(path: Path, spec: TaskSpec, state, records: list[dict]) -> None:
    """The baseline ladder, the autonomy count and the resources line (mlguild.view.status)."""
    standing = run_standing(path, spec.metric, state, records)
    for line in ladder_lines(standing["ladder"]):
        console.print(plain(line))
    print_wrapped(autonomy_line(standing["autonomy"]), "")
    print_wrapped(resources_line(standing["resources"]), "")
    if line := reviews_line(standing["reviews"]):
        print_wrapped(line, "")


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
        largest, near_copies, measured = pools.copying()
        ideas = pools.ideas.all()
        community = sum(1 for i in ideas if i.origin == "community")
        reports = len(pools.store.keys("reports"))
    finally:
        pools.close()
    share = f"{used}/{reported} ({100 * used / reported:.0f}%)" if reported else "—"
    console.print(
        f"pools: {reports} reports; {len(ideas)} ideas ({community} from the community, {len(ideas) - community} from reports)\n"
        f"  attempts that used a community idea: {share}, the rest new"
    )
    if largest is not None and largest.overlap is not None:
        console.print(
            f"  code from the community: at most {largest.overlap:.0%} of a script ({largest.node}, item "
            f"{largest.overlap_item}); near-copies {near_copies} of {measured}"
        )


def _public(public: dict, node_id: str) -> str:
    if node_id not in public:
        return ""
    score = public[node_id]
    return format_score(score) if score is not None else "error"


def _node_and_run(names: list[str], run: str | None) -> tuple[str, str | None]:
    """(node, run) from `show`'s arguments: NODE, or RUN NODE (the run first, as `status RUN`
    and `resume RUN` take it); --run RUN NODE is the older spelling, still taken."""
    if len(names) == 1:
        return names[0], run
    if len(names) == 2 and run is None:
        return names[1], names[0]
    raise ConfigError(
        f"show takes a node, or a run and a node; got {' '.join(names)}" + (f" and --run {run}" if run else ""),
        "e.g. `mlguild show best` or `mlguild show RUN n0003`",
    )


def show(
    names: list[str] = typer.Argument(
        ..., help="NODE, or RUN NODE as `status RUN` names a run: a node id, e.g. n0003 (or 'best')."
    ),
    run: str | None = typer.Option(None, "--run", "-r", help="Run directory (default: the latest); or name it first."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
    lines: int = typer.Option(30, help="Output lines to show."),
    code: bool = typer.Option(False, "--code", help="Print the whole solution.py too (by default only its path)."),
) -> None:
    """One node: plan, output tail and score; its code with --code."""
    with user_errors():
        node_id, run = _node_and_run(names, run)
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
            f"holdout {spec.metric}: {format_score(node.score)} (harness, sealed labels)",
            markup=False,
        )
        console.print(
            f"printed by the script: {format_score(node.printed_score)} (not trusted)",
            markup=False,
        )
        if node.failure:
            console.print(f"failure: {node.failure}", markup=False)
        if node.meta.get("ideas_offered") or node.meta.get("ideas"):  # stage I: what it was offered, what it used
            console.rule("ideas")
            console.print("\n".join(_idea_lines(path, node.meta)), markup=False)
        if isinstance(node.meta.get("review"), dict):  # the LLM's code review before it ran
            console.rule("review")
            console.print("\n".join(review_lines(node.meta["review"])), markup=False)


def _idea_lines(path: Path, meta: dict) -> list[str]:
    """The ideas the node was offered (meta ``ideas_offered``, best ranked first) and those its
    plan used (meta ``ideas``), each with its text from the run's idea pool."""
    from ..pools import Pools
    from ..pools.store import FILE

    used = [str(i) for i in meta.get("ideas") or ()]
    offered = [str(i) for i in meta.get("ideas_offered") or ()]
    texts: dict[str, str] = {}
    if (path / FILE).is_file():
        pools = Pools.open(path)
        try:
            for idea_id in dict.fromkeys(offered + used):
                try:
                    texts[idea_id] = pools.ideas.get(idea_id).text
                except KeyError:  # an id the model made up
                    texts[idea_id] = "(not in the idea pool)"
        finally:
            pools.close()
    lines = [f"offered {len(offered)}, used {len(used)}:" if offered else f"used {len(used)} (no offer recorded):"]
    for idea_id in dict.fromkeys(offered + used):
        mark = "used" if idea_id in used else "    "
        lines.append(f"  {mark} [{idea_id}] {texts.get(idea_id, '')}".rstrip())
    return lines
