"""`mlguild run` and `mlguild resume`: start or continue the improvement loop."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..config import MIN_RUN_S, load_config, parse_duration
from ..core.errors import ConfigError
from ..core.score import format_score
from ..launch.entry import Finished, start
from ..launch.entry import resume as resume_run
from .common import console, default_runs_dir, plain, print_wrapped, resolve_run, user_errors
from .progress import Progress

WORKERS_HELP = "Workers proposing and running nodes at once (default 1), each script pinned to its share of the CPUs."
RAY_HELP = "Run the workers' scripts on a Ray cluster: auto (this machine's, else a local instance) or its address (the \\[ray] extra)."
NO_REVIEW_HELP = "No LLM code review of a script before it runs (brain.review=false)."
REFERENCE_HELP = "A score known to be reachable (e.g. the winning leaderboard score): the baseline ladder's ceiling (final.reference_score)."
QUIET_HELP = "No live board: plain lines only (as when the output is not a terminal)."
SIGINT_EXIT = 130  # the shell's status for a command ended by SIGINT
SANDBOX_HELP = (
    "Sandbox layer: auto (bwrap when usable; without it, only the recipe and scripted "
    "brains' own scripts fall back to local), bwrap, or local (accepts the weaker, "
    "unconfined layer, also for LLM-written scripts)."
)


def _overrides(
    sets: list[str],
    time: str | None,
    iterations: int | None,
    brain: str | None,
    script_timeout: str | None,
    seed: int | None,
    models: list[str] | None = None,
    sandbox: str | None = None,
) -> list[str]:
    out = list(sets)
    if models:
        out.append(f"llm.models={json.dumps(models)}")
    if time:
        out.append(f"budget.time_s={parse_duration(time, '--time', MIN_RUN_S)}")
    if iterations is not None:
        if iterations < 1:  # 0 must not read as "no limit given"
            raise ConfigError(
                f"--iterations must be at least 1 (got {iterations})",
                "pass --iterations N with N >= 1, or leave it out to stop on --time only",
            )
        out.append(f"budget.iterations={iterations}")
    if sandbox:
        out.append(f"sandbox.kind={sandbox}")
    if brain:
        out.append(f"brain.name={brain}")
    if script_timeout:
        out.append(f"sandbox.script_timeout_s={parse_duration(script_timeout, '--script-timeout')}")
    if seed is not None:
        out += [f"brain.seed={seed}", f"search.seed={seed}", f"firewall.seed={seed}"]
    return out


def _ladder_and_review(no_review: bool, reference_score: float | None) -> list[str]:
    """The settings --no-review and --reference-score stand for."""
    return (["brain.review=false"] if no_review else []) + (
        [f"final.reference_score={reference_score}"] if reference_score is not None else []
    )


def _say(line: str, warning: bool) -> None:
    """Print a line a run announces (text from data is escaped)."""
    console.print(f"[yellow]warning:[/] {plain(line)}" if warning else plain(line))


def _report(done: Finished) -> None:
    """What a finished session says on the console; then its verdict (``Finished.check``)."""
    run, stop = done.run, done.stop
    for node, score in done.public_scores.items():
        console.print(f"kaggle {plain(node)}: public leaderboard {run.spec.metric} {score}")
    if not stop.finished:
        console.print(
            f"[yellow]not graded on the test answers[/] (the run did not finish its budget); continue with `mlguild resume {run.path}`"
        )
    console.print(f"\nstopped: {stop}; {done.searched} nodes, {done.scored} scored")
    best = done.best
    if best is None:
        done.check()  # a finished run with no valid submission is an error
        console.print("[yellow]no node produced a valid submission yet[/]; see `mlguild status " + str(run.path) + "`")
        return
    console.print(
        f"best  {best.id}: holdout {run.spec.metric} {format_score(best.score)}  →  {run.best_dir / 'submission.csv'}"
    )
    choice, grade = done.finish.choice, done.finish.grade
    if choice is not None:
        console.print(f"final {choice['node']}  →  {run.path / 'final' / 'submission.csv'}")
        print_wrapped(f"({choice['reason']})", " " * 6)
    if grade is not None:
        shown = (
            format_score(grade["test_score"])
            if grade.get("test_score") is not None
            else f"invalid ({grade.get('error')})"
        )
        console.print(f"test  {run.spec.metric} {shown} (graded once on sealed test answers, node {grade['node']})")
    done.check()


def run(
    task: str = typer.Argument(..., help="A task folder, example:NAME, or csv:PATH (then --target)."),
    time: str | None = typer.Option(None, "--time", "-t", help="Wall-clock budget, e.g. 90s, 5m, 2h."),
    iterations: int | None = typer.Option(None, "--iterations", "-n", help="Maximum number of nodes."),
    brain: str | None = typer.Option(
        None, help="auto (llm if --model is given, else recipes), recipes, llm, hybrid, scripted."
    ),
    model: list[str] = typer.Option(
        [],
        "--model",
        "-m",
        help="LLM as provider/name, e.g. openai/gpt-4.1 or ollama/qwen2.5-coder:14b; repeat for a fallback chain.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Scripted brain and tiny budget: checks the whole pipeline in seconds."
    ),
    target: str | None = typer.Option(
        None, help="Target column, for csv: sources and for a competition folder without task.yaml."
    ),
    metric: str | None = typer.Option(
        None,
        help="Metric, for a competition folder without task.yaml whose description names none; "
        "'NAME where COLUMN=VALUE' scores only the rows holding that value (as a grader that leaves rows out).",
    ),
    runs_dir: Path = typer.Option(None, help="Where runs are written (default ./runs or $MLGUILD_RUNS)."),
    run_id: str | None = typer.Option(None, help="Name of the run directory (default: task-date-time-random)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML file with config sections."),
    set_: list[str] = typer.Option([], "--set", help="Override a config value: section.field=value (repeatable)."),
    script_timeout: str | None = typer.Option(None, help="Time limit of one script, e.g. 120s."),
    seed: int | None = typer.Option(None, help="Seed for the split, the policy and the brain."),
    strict: bool = typer.Option(
        False, "--strict", help="Refuse to run unless the namespace sandbox (bubblewrap) is available."
    ),
    sandbox: str | None = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    stop_on_convergence: bool = typer.Option(
        False,
        "--stop-on-convergence",
        help="End early once the search has converged: several scored nodes in a row gained less than the noise floor.",
    ),
    no_memory: bool = typer.Option(
        False,
        "--no-memory",
        help="Neither read nor write the memory store shared by runs (memory.enabled=false): a clean run.",
    ),
    submit: str | None = typer.Option(
        None,
        "--submit",
        help="never (default), best (the final submission, at the end) or each (every new best node): "
        "to Kaggle, for a task made from a Kaggle competition.",
    ),
    no_launch: bool = typer.Option(
        False, "--no-launch", help="Create the run and write its brief.md, then stop: edit the brief, then resume."
    ),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1, help=WORKERS_HELP),
    ray: str | None = typer.Option(None, "--ray", help=RAY_HELP),
    cycle: str | None = typer.Option(
        None,
        "--cycle",
        help="community (LLM brain): select ideas from the idea pool, draft, implement with a write-run-observe-refine loop (its final script scored once), the model reports.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
    no_review: bool = typer.Option(False, "--no-review", help=NO_REVIEW_HELP),
    reference_score: float | None = typer.Option(None, "--reference-score", help=REFERENCE_HELP),
) -> None:
    """Start a run: firewall the data, then improve a solution until the budget ends.

    Exits 0 when the budget ended, 2 on a usage error, 130 after Ctrl-C (resume it)."""
    with user_errors():
        if dry_run:
            brain = brain or "scripted"
            iterations = 4 if iterations is None else iterations
        overrides = _overrides(set_, time, iterations, brain, script_timeout, seed, model, sandbox)
        if strict:
            overrides.append("sandbox.strict=true")
        if stop_on_convergence:
            overrides.append("search.stop_on_convergence=true")
        if submit is not None:
            overrides.append(f"kaggle.submit={submit}")
        if no_memory or dry_run:  # a dry run's stand-in scripts teach nothing worth keeping
            overrides.append("memory.enabled=false")
        if workers is not None:
            overrides.append(f"search.workers={workers}")
        if ray is not None:
            overrides.append(f"search.ray={ray}")
        if cycle is not None:
            overrides.append(f"brain.cycle={cycle}")
        overrides += _ladder_and_review(no_review, reference_score)
        cfg = load_config(config, overrides)
        done = start(
            task,
            cfg,
            runs_dir=runs_dir or default_runs_dir(),
            run_id=run_id,
            dry_run=dry_run,
            launch=not no_launch,
            target=target,
            metric=metric,
            say=_say,
            watch=lambda session: Progress(session, quiet),
        )
        if not isinstance(done, Finished):  # --no-launch: the run folder, with its brief
            console.print(plain(f"not launched: edit the brief, then `mlguild resume {done.path}`"))
            return
        _report(done)
        stop = done.stop
    if not stop.finished:
        raise typer.Exit(SIGINT_EXIT)


def resume(
    run: str | None = typer.Argument(None, help="Run directory (default: the latest in the runs dir)."),
    time: str | None = typer.Option(None, "--time", "-t", help="New total budget of the run (default: the original)."),
    iterations: int | None = typer.Option(None, "--iterations", "-n", help="New total node budget."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
    sandbox: str | None = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1, help=WORKERS_HELP),
    ray: str | None = typer.Option(None, "--ray", help=RAY_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
    no_review: bool = typer.Option(False, "--no-review", help=NO_REVIEW_HELP),
    reference_score: float | None = typer.Option(None, "--reference-score", help=REFERENCE_HELP),
) -> None:
    """Continue a run after a stop or a kill; finished nodes are never re-run.

    Exits 0 when the budget ended, 2 on a usage error, 130 after Ctrl-C (resume it again)."""
    with user_errors():
        overrides = _overrides([], time, iterations, None, None, None, sandbox=sandbox)
        if workers is not None:
            overrides.append(f"search.workers={workers}")
        if ray is not None:
            overrides.append(f"search.ray={ray}")
        overrides += _ladder_and_review(no_review, reference_score)
        path = resolve_run(run, runs_dir or default_runs_dir())
        done = resume_run(path, overrides, say=_say, watch=lambda session: Progress(session, quiet))
        _report(done)
        stop = done.stop
    if not stop.finished:
        raise typer.Exit(SIGINT_EXIT)
