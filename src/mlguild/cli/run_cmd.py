"""`mlguild run` and `mlguild resume`: start or continue the improvement loop."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import typer

from ..agent import Agent, Stop
from ..brains import LLM_CODE_BRAINS, get_brain, resolve_brain_name
from ..brains.llm_brain import LLMBrainOptions
from ..brains.scripted import PRIOR_SCRIPT
from ..config import load_config, parse_duration, save_config
from ..diagnose import diagnose
from ..errors import ConfigError, KaggleError, RunError
from ..final_stage import finish
from ..kaggle_api import competition_slug
from ..llm.config import build_router
from ..llm.registry import make_llm
from ..llm.scripted import ScriptedLLM
from ..rundir import RunDir, create_run, open_run
from ..sandbox import describe_layer, get_sandbox, is_strong
from ..search import get_policy
from ..submitter import Submitter, kaggle_slug
from ..verdict import check_learned, floors
from ..vocabulary import REFIT
from .common import console, default_runs_dir, plain, resolve_run, user_errors
from .prepare import fill_ideas, write_brief
from .progress import Progress
from .task_cmd import resolve_task

WORKERS_HELP = "Workers proposing and running nodes at once (default 1), each script pinned to its share of the CPUs."
RAY_HELP = "Run the workers' scripts on a Ray cluster: auto (this machine's, else a local instance) or its address ([ray] extra)."
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
        out.append(f"budget.time_s={parse_duration(time)}")
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
        out.append(f"sandbox.script_timeout_s={parse_duration(script_timeout)}")
    if seed is not None:
        out += [f"brain.seed={seed}", f"search.seed={seed}", f"firewall.seed={seed}"]
    return out


def _brain_for(run: RunDir, fake_llm: bool = False):
    """The brain the config asks for; an LLM is built (and its keys checked) only if needed."""
    cfg = run.config
    name = resolve_brain_name(cfg.brain.name, bool(cfg.llm.models) or fake_llm)

    def llm_factory():
        if fake_llm and not cfg.llm.models:
            return ScriptedLLM(
                model="scripted/prior", default=f"A prior predictor.\n```python\n{PRIOR_SCRIPT.format(shrink=0.2)}```\n"
            )
        records = [r for r in run.journal.records if r["type"] == "llm_call"]
        return build_router(
            cfg.llm, run_dir=run.path, records=records, sink=lambda rec: run.journal.append("llm_call", **rec)
        )

    options = LLMBrainOptions.from_config(cfg, threads=cfg.sandbox.threads or os.cpu_count() or 1)
    brain = get_brain(name, seed=cfg.brain.seed, llm_factory=llm_factory, options=options)
    chain = " → ".join(cfg.llm.models) or ("scripted fake LLM" if fake_llm else "")
    line = {
        "recipes": "recipes (offline recipes; no LLM configured)" if not cfg.llm.models else "recipes (offline)",
        "llm": f"llm ({chain})",
        "hybrid": f"hybrid (recipes draft; {chain} improves and repairs)",
        "scripted": "scripted (dry run)",
    }[name]
    return brain, line


def _sandbox_for(cfg, brain_name: str):
    """The sandbox the config asks for, and the one line that says what it is and what it
    does not cover (a warning when "auto" fell back to the weak local layer). Raises
    ConfigError when "auto" would run LLM-written scripts unconfined (get_sandbox), or
    --strict finds only the weak layer."""
    kind = cfg.sandbox.kind
    sandbox = get_sandbox(kind, llm_code=brain_name in LLM_CODE_BRAINS, gpu=cfg.sandbox.gpu)
    if cfg.sandbox.strict and not is_strong(sandbox):
        raise ConfigError(
            f"--strict: only the weaker sandbox layer is available ({describe_layer(sandbox)})",
            "apt-get install -y bubblewrap (as root), or run without --strict",
        )
    line = "sandbox " + describe_layer(sandbox).removeprefix("sandbox: ")
    if kind == "auto" and not is_strong(sandbox):  # the harness's own scripts only (see get_sandbox)
        line = f"[yellow]warning:[/] {line}"
    return sandbox, line


def _submitter_for(run: RunDir) -> Submitter | None:
    """The Kaggle submitter when the run submits (kaggle.submit); its problems stop it now."""
    if run.config.kaggle.submit == "never":
        return None
    from ..kaggle_api import connect

    slug = kaggle_slug(run)
    if slug is None:  # before connecting: the task, not the network, is what is wrong
        raise KaggleError(
            "--submit needs a task made from a Kaggle competition",
            "make one with `mlguild init https://www.kaggle.com/competitions/NAME`, or drop --submit",
        )
    client = connect()
    limit = client.competition(slug).max_daily_submissions
    return Submitter(run, client, warn=lambda m: console.print(f"[yellow]warning:[/] {plain(m)}"), daily_limit=limit)


def _with_submitter(progress: Progress, submitter: Submitter | None):
    """The agent's event handler: the progress display, and `each` submissions of a new best."""
    if submitter is None:
        return progress

    def handle(kind: str, data: dict) -> None:
        progress(kind, data)
        if kind == "node_finished" and data.get("is_best"):
            submitter.on_best(data["best"])

    return handle


def _drive(run: RunDir, fake_llm: bool = False, quiet: bool = False) -> Stop:
    """Run the loop, then finish the run (the library's final stage and grade); return why
    the loop stopped."""
    cfg = run.config
    sandbox, sandbox_line = _sandbox_for(cfg, resolve_brain_name(cfg.brain.name, bool(cfg.llm.models) or fake_llm))
    if cfg.search.ray:
        from ..ray_workers import RaySandbox, connect

        sandbox_line += f"; scripts run on a {connect(cfg.search.ray)} ({cfg.search.workers} worker(s))"
        sandbox = RaySandbox(sandbox)
    brain, brain_line = _brain_for(run, fake_llm)
    submitter = _submitter_for(run)
    write_brief(run, brain, fake_llm)
    fill_ideas(run, brain, fake_llm)
    agent = Agent(run, brain, get_policy(cfg.search, cfg.budget), sandbox)
    console.print(f"run   {plain(run.path)}")
    console.print(
        f"task  {plain(run.spec.name)}: {run.spec.task_type}, metric {run.spec.metric} ({agent.scorers.holdout.metric.direction}) on a sealed holdout"
    )
    console.print(f"brain {plain(brain_line)}")
    console.print(sandbox_line)
    with Progress(agent, quiet) as progress:
        agent.on_event = _with_submitter(progress, submitter)
        stop = agent.run_loop()
    done = finish(agent, stop)
    _write_report(run)
    if submitter is not None and stop.finished:
        submitter.at_end(done.choice["node"] if done.choice else agent.state.best_id)
        for node, score in submitter.public_scores().items():
            console.print(f"kaggle {plain(node)}: public leaderboard {run.spec.metric} {score}")
    if not stop.finished:
        console.print(
            f"[yellow]not graded on the test answers[/] (the run did not finish its budget); continue with `mlguild resume {run.path}`"
        )
    best = agent.state.graph[agent.state.best_id] if agent.state.best_id else None
    scored = sum(1 for n in agent.state.graph if n.ok)
    searched = sum(1 for n in agent.state.graph if n.op != REFIT)
    console.print(f"\nstopped: {stop}; {searched} nodes, {scored} scored")
    if best is None:
        if stop.finished:
            raise RunError(
                f"no node produced a valid submission in {searched} nodes ({_common_failure(agent)})",
                f"see `mlguild status {run.path}` and `mlguild show <node> --run {run.path}`; "
                f"give it more time with `mlguild resume {run.path} --time 30m`",
            )
        console.print("[yellow]no node produced a valid submission yet[/]; see `mlguild status " + str(run.path) + "`")
        return stop
    console.print(f"best  {best.id}: holdout {run.spec.metric} {best.score:.6g}  →  {run.best_dir / 'submission.csv'}")
    if done.choice is not None:
        console.print(
            f"final {done.choice['node']}: {done.choice['reason']}  →  {run.path / 'final' / 'submission.csv'}"
        )
    if done.grade is not None:
        grade = done.grade
        shown = (
            f"{grade['test_score']:.6g}" if grade.get("test_score") is not None else f"invalid ({grade.get('error')})"
        )
        console.print(f"test  {run.spec.metric} {shown} (graded once on sealed test answers, node {grade['node']})")
    if stop.finished and not fake_llm and brain.name != "scripted":  # a dry run checks plumbing, not learning
        check_learned(best.score, floors(run.journal.records), agent.scorers.holdout.metric.direction, run.spec.metric)
    return stop


def _write_report(run: RunDir) -> None:
    """The run's report.html and report.md, at the end of every session: a report that
    cannot be written is a warning, never the run's failure."""
    from ..view.report import write_report

    try:
        written = write_report(run.path)
    except Exception as exc:  # a view's bug or a full disk must not fail a run that did its work
        console.print(f"[yellow]warning:[/] no report written: {plain(exc)}")
        return
    console.print(
        plain(f"report {written.files[0]}") + (f"  [yellow]({plain(written.note)})[/]" if written.note else "")
    )


def _common_failure(agent: Agent) -> str:
    """The most frequent way the nodes failed, as "6 crash: TypeError in step 'columns' ..."."""
    columns = [c.name for c in agent.run.profile.columns]
    causes = Counter(
        f"{n.status}: {diagnose(n.failure or '', '', columns).summary()}"
        for n in agent.state.graph
        if not n.ok and n.op != REFIT
    )
    if not causes:
        return "no node finished"
    cause, count = causes.most_common(1)[0]
    return f"most often, {count} times: {cause}"


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
        None, help="Metric, for a competition folder without task.yaml whose description names none."
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
        help="community (LLM brain): select ideas from the idea pool, draft, implement with a run-observe-fix loop, report.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
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
        cfg = load_config(config, overrides)
        brain_name = resolve_brain_name(cfg.brain.name, bool(cfg.llm.models) or dry_run)  # fail before any work
        if cfg.brain.cycle != "off" and brain_name != "llm":
            raise ConfigError(
                f"--cycle {cfg.brain.cycle} needs the LLM brain (this run's brain: {brain_name})",
                "give a model: --model provider/name (and --brain llm or auto), or drop --cycle",
            )
        # an unusable or refused sandbox too, before any LLM call or run directory
        get_sandbox(cfg.sandbox.kind, llm_code=brain_name in LLM_CODE_BRAINS)
        for name in cfg.llm.models:
            make_llm(name)  # a missing key or SDK fails now, naming the fix
        if cfg.budget.time_s is None and cfg.budget.iterations is None:
            default = cfg.budget.default_time_s
            cfg = load_config(config, [*overrides, f"budget.time_s={default}"])
            console.print(
                f"no --time or --iterations given: using the default budget of {default:g} s (budget.default_time_s)"
            )
        loaded = resolve_task(task, target=target, metric=metric)
        if cfg.kaggle.submit != "never" and competition_slug(loaded.spec.source or "") is None:
            raise KaggleError(
                "--submit needs a task made from a Kaggle competition",
                "make one with `mlguild init https://www.kaggle.com/competitions/NAME`, or drop --submit",
            )
        run_dir = create_run(loaded, cfg, runs_dir or default_runs_dir(), run_id)
        try:
            if no_launch:
                write_brief(run_dir, _brain_for(run_dir, dry_run)[0], dry_run)
                console.print(plain(f"not launched: edit the brief, then `mlguild resume {run_dir.path}`"))
                return
            stop = _drive(run_dir, fake_llm=dry_run, quiet=quiet)
        finally:
            run_dir.close()
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
) -> None:
    """Continue a run after a stop or a kill; finished nodes are never re-run.

    Exits 0 when the budget ended, 2 on a usage error, 130 after Ctrl-C (resume it again)."""
    with user_errors():
        overrides = _overrides([], time, iterations, None, None, None, sandbox=sandbox)
        if workers is not None:
            overrides.append(f"search.workers={workers}")
        if ray is not None:
            overrides.append(f"search.ray={ray}")
        run_dir = open_run(resolve_run(run, runs_dir or default_runs_dir()))
        try:
            if overrides:
                tree = run_dir.config.model_dump()
                run_dir.config = load_config(None, overrides, base=tree)
                save_config(run_dir.config, run_dir.path / "config.yaml")
            stop = _drive(run_dir, quiet=quiet)
        finally:
            run_dir.close()
    if not stop.finished:
        raise typer.Exit(SIGINT_EXIT)
