"""`mlguild run` and `mlguild resume`: start or continue the improvement loop."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..agent import Agent
from ..brains import get_brain
from ..config import load_config, parse_duration, save_config
from ..final import grade_final
from ..rundir import RunDir, create_run, open_run
from ..sandbox import get_sandbox
from ..search import get_policy
from .common import console, default_runs_dir, resolve_run, user_errors
from .progress import Progress
from .task_cmd import resolve_task


def _overrides(sets: list[str], time: str | None, iterations: int | None, brain: str | None,
               script_timeout: str | None, seed: int | None) -> list[str]:
    out = list(sets)
    if time:
        out.append(f"budget.time_s={parse_duration(time)}")
    if iterations:
        out.append(f"budget.iterations={iterations}")
    if brain:
        out.append(f"brain.name={brain}")
    if script_timeout:
        out.append(f"sandbox.script_timeout_s={parse_duration(script_timeout)}")
    if seed is not None:
        out += [f"brain.seed={seed}", f"search.seed={seed}", f"firewall.seed={seed}"]
    return out


def _drive(run: RunDir) -> None:
    cfg = run.config
    brain = get_brain(cfg.brain.name, seed=cfg.brain.seed)
    agent = Agent(run, brain, get_policy(cfg.search), get_sandbox(cfg.sandbox.kind))
    console.print(f"run   {run.path}")
    console.print(f"task  {run.spec.name}: {run.spec.task_type}, metric {run.spec.metric} ({agent.runner.metric.direction}) on a sealed holdout")
    console.print(f"brain {brain.name}" + (" (offline recipes; no LLM configured)" if brain.name == "recipes" else ""))
    with Progress(agent) as progress:
        agent.on_event = progress
        reason = agent.run_loop()
    grade = grade_final(run, agent.state, agent.runner) if cfg.final.grade_test else None
    best = agent.state.graph[agent.state.best_id] if agent.state.best_id else None
    scored = sum(1 for n in agent.state.graph if n.ok)
    console.print(f"\nstopped: {reason}; {len(agent.state.graph)} nodes, {scored} scored")
    if best is None:
        console.print("[yellow]no node produced a valid submission[/]; see `mlguild status " + str(run.path) + "`")
        return
    console.print(f"best  {best.id}: holdout {run.spec.metric} {best.score:.6g}  →  {run.best_dir / 'submission.csv'}")
    if grade is not None:
        shown = f"{grade['test_score']:.6g}" if grade.get("test_score") is not None else f"invalid ({grade.get('error')})"
        console.print(f"test  {run.spec.metric} {shown} (graded once on sealed test answers, node {grade['node']})")


def run(
    task: str = typer.Argument(..., help="A task folder, example:NAME, or csv:PATH (then --target)."),
    time: Optional[str] = typer.Option(None, "--time", "-t", help="Wall-clock budget, e.g. 90s, 5m, 2h."),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-n", help="Maximum number of nodes."),
    brain: Optional[str] = typer.Option(None, help="recipes (offline default) or scripted."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Scripted brain and tiny budget: checks the whole pipeline in seconds."),
    target: Optional[str] = typer.Option(None, help="Target column, for csv: sources."),
    runs_dir: Path = typer.Option(None, help="Where runs are written (default ./runs or $MLGUILD_RUNS)."),
    run_id: Optional[str] = typer.Option(None, help="Name of the run directory (default: task-date-time-random)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML file with config sections."),
    set_: List[str] = typer.Option([], "--set", help="Override a config value: section.field=value (repeatable)."),
    script_timeout: Optional[str] = typer.Option(None, help="Time limit of one script, e.g. 120s."),
    seed: Optional[int] = typer.Option(None, help="Seed for the split, the policy and the brain."),
) -> None:
    """Start a run: firewall the data, then improve a solution until the budget ends."""
    with user_errors():
        if dry_run:
            brain = brain or "scripted"
            iterations = iterations or 4
        overrides = _overrides(set_, time, iterations, brain, script_timeout, seed)
        cfg = load_config(config, overrides)
        if cfg.budget.time_s is None and cfg.budget.iterations is None:
            cfg = load_config(config, overrides + ["budget.time_s=600"])
            console.print("no --time or --iterations given: using a 10 minute budget")
        loaded = resolve_task(task, target=target)
        run_dir = create_run(loaded, cfg, runs_dir or default_runs_dir(), run_id)
        run_dir.lock()
        try:
            _drive(run_dir)
        finally:
            run_dir.close()


def resume(
    run: Optional[str] = typer.Argument(None, help="Run directory (default: the latest in the runs dir)."),
    time: Optional[str] = typer.Option(None, "--time", "-t", help="New total budget of the run (default: the original)."),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-n", help="New total node budget."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
) -> None:
    """Continue a run after a stop or a kill; finished nodes are never re-run."""
    with user_errors():
        run_dir = open_run(resolve_run(run, runs_dir or default_runs_dir()))
        run_dir.lock()
        try:
            if time or iterations:
                tree = run_dir.config.model_dump()
                run_dir.config = load_config(None, _overrides([], time, iterations, None, None, None), base=tree)
                save_config(run_dir.config, run_dir.path / "config.yaml")
            _drive(run_dir)
        finally:
            run_dir.close()
