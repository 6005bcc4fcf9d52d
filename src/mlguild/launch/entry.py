"""The library's entry point: start a run on a task, or resume one, and return what finished.

``start`` and ``resume`` are what the CLI (``mlguild run``, ``mlguild resume``), the bench
runner (through ``mlguild run`` in a child process) and the tests call. Everything that wires
a run lives here, once: the checks of a configuration before anything is created, the
brain, its LLM and the sandbox (built by ``run.parts``; Ray too), the Kaggle submitter, the
brief and the idea pool, the session and its loop, then the final stage. The caller is told what happens through two
callbacks: ``say(line, warning)`` for the lines a run announces itself with, and the
session's event handler, which ``watch`` may wrap (the CLI's live progress).

Nothing here prints or exits: a problem is an ``MlguildError`` with the command that fixes
it, raised before the run folder is created whenever the configuration alone shows it.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..brains import LLM_CODE_BRAINS, resolve_brain_name
from ..coder.diagnose import diagnose
from ..config import Config, load_config, save_config
from ..core.errors import ConfigError, KaggleError, RunError
from ..core.graph import Node, SearchGraph
from ..core.vocabulary import Event, Op
from ..final.stage import Finish, finish
from ..firewall.time_split import split_line
from ..kaggle.api import competition_slug
from ..kaggle.submitter import Submitter, kaggle_slug
from ..llm.base import LLM
from ..llm.reach import local_server_warnings
from ..llm.registry import make_llm
from ..metrics import get_metric
from ..pools import Pools, fill_run_guild, fill_run_ideas
from ..run.budget import Stop, spent_budget
from ..run.loop import Agent
from ..run.session import EventHandler, Session, open_session
from ..rundir.disk_full import resumable_when_full
from ..rundir.folder import RunDir, create_run, open_run
from ..rundir.interventions import mark_seen, on_resume
from ..sandbox import get_sandbox
from ..scoring.floors import check_learned, floors
from ..sources.resolve import resolve_task
from ..task.brief import brief_path, ensure_brief
from ..task.folder import Task, test_gap
from .parts import brain_for, brain_line, llm_for, sandbox_for

Say = Callable[[str, bool], None]  # (line, is_warning)
Watch = Callable[[Session], AbstractContextManager[EventHandler]]


def _quiet(line: str, warning: bool = False) -> None:
    """Say nothing (the default for library callers)."""


@dataclass
class Finished:
    """What a session of a run ended with: why it stopped, the final choice and the
    once-only grade (each None when there was none), the best node, and the counts."""

    run: RunDir
    stop: Stop
    finish: Finish
    best: Node | None
    searched: int  # nodes of the search (refits excluded)
    scored: int
    dry_run: bool = False
    public_scores: dict[str, float | None] = field(default_factory=dict)  # Kaggle's, by node
    common_failure: str = ""  # the most frequent way its nodes failed, for a run with no best node

    def check(self) -> None:
        """Raise what a finished run that did not work must tell its user: no node produced
        a valid submission (RunError), or the best did not beat a constant prediction on the
        holdout (NothingLearnable). A run that did not finish its budget, or a dry run (it
        checks plumbing, not learning), is not judged."""
        if not self.stop.finished:
            return
        path = self.run.path
        if self.best is None:
            raise RunError(
                f"no node produced a valid submission in {self.searched} nodes ({self.common_failure})",
                f"see `mlguild status {path}` and `mlguild show <node> --run {path}`; "
                f"give it more time with `mlguild resume {path} --time 30m`",
            )
        if not self.dry_run:
            direction = get_metric(self.run.spec.metric).direction
            # The floors are holdout scores: a pooled score (holdout and out-of-fold rows, on a
            # small holdout) is not on their scale, so the best node's holdout score is compared.
            held = self.best.holdout_score if self.best.holdout_score is not None else self.best.score
            check_learned(held, floors(self.run.journal.records), direction, self.run.spec.metric)


def check_config(config: Config, dry_run: bool = False) -> str:
    """Check what a configuration alone can show is wrong, before anything is created; the
    resolved brain name."""
    brain_name = resolve_brain_name(config.brain.name, bool(config.llm.models) or dry_run)
    if config.brain.cycle != "off" and brain_name != "llm":
        raise ConfigError(
            f"--cycle {config.brain.cycle} needs the LLM brain (this run's brain: {brain_name})",
            "give a model: --model provider/name (and --brain llm or auto), or drop --cycle",
        )
    # an unusable or refused sandbox too, before any LLM call or run directory
    get_sandbox(config.sandbox.kind, llm_code=brain_name in LLM_CODE_BRAINS)
    for name in config.llm.models:
        make_llm(name)  # a missing key or SDK fails now, naming the fix
    return brain_name


def check_local_servers(config: Config, brain_name: str, say: Say) -> None:
    """A brain that writes code with an LLM on a local server that refuses connections: stop
    now when the whole chain is down, else one warning per silent server (llm/reach)."""
    if brain_name in LLM_CODE_BRAINS:
        for line in local_server_warnings(config.llm.models):
            say(line, True)


def start(
    task: Task | str | Path,
    config: Config | None = None,
    *,
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    dry_run: bool = False,
    launch: bool = True,
    target: str | None = None,
    metric: str | None = None,
    say: Say = _quiet,
    watch: Watch | None = None,
    on_event: EventHandler | None = None,
) -> Finished | RunDir:
    """Start a run of ``task`` (a Task, a task folder, ``example:NAME`` or ``csv:PATH``; then
    ``target``) with ``config`` (default: the packaged defaults) in ``runs_dir``, improve it
    until its budget ends, finish it, and return what finished. ``dry_run``: the scripted
    brain's stand-in scripts (``--dry-run``). ``launch=False``: create the run and write its
    brief, then return the run folder (closed) without running a node."""
    config = config or load_config(None, [])
    brain_name = check_config(config, dry_run)
    check_local_servers(config, brain_name, say)
    if config.budget.time_s is None and config.budget.iterations is None:
        default = config.budget.default_time_s
        config = config.model_copy(update={"budget": config.budget.model_copy(update={"time_s": default})})
        say(
            f"no --time or --iterations given: using the default budget of {default:g} s (budget.default_time_s)", False
        )
    if isinstance(task, Task):
        loaded = task
    else:
        loaded = resolve_task(str(task), target=target, metric=metric, say=lambda line: say(line, False))
    if config.kaggle.submit != "never" and competition_slug(loaded.spec.source or "") is None:
        raise KaggleError(
            "--submit needs a task made from a Kaggle competition",
            "make one with `mlguild init https://www.kaggle.com/competitions/NAME`, or drop --submit",
        )
    if (gap := test_gap(loaded)) is not None:
        say(gap, True)
    run = create_run(loaded, config, Path(runs_dir), run_id)
    if (split := split_line(run.workspace.manifest()["split"])) is not None:
        say(*split)  # a holdout of the latest rows, or the warning for a random one on time-ordered data
    try:
        with resumable_when_full(run.path):  # a disk that fills up: one line, and the run resumes
            if not launch:
                llm = llm_for(run, brain_name, dry_run)
                _write_brief(run, None if dry_run else llm, say)
                return run
            return drive(run, dry_run=dry_run, brain_name=brain_name, say=say, watch=watch, on_event=on_event)
    finally:
        run.close()


def resume(
    path: str | Path,
    overrides: list[str] | None = None,
    *,
    say: Say = _quiet,
    watch: Watch | None = None,
    on_event: EventHandler | None = None,
) -> Finished:
    """Continue the run at ``path`` after a stop or a kill (finished nodes are never run
    again); ``overrides`` (``section.field=value``) change its saved configuration first."""
    with resumable_when_full(Path(path).resolve()):
        run = open_run(path)
    try:
        config = load_config(None, overrides, base=run.config.model_dump()) if overrides else run.config
        graph = _check_not_finished(run, config)
        check_local_servers(config, resolve_brain_name(config.brain.name, bool(config.llm.models)), say)
        with resumable_when_full(run.path):
            on_resume(run, graph, overrides or [])  # journaled before anything changes
            if overrides:
                run.config = config
                save_config(run.config, run.path / "config.yaml")
            return drive(run, say=say, watch=watch, on_event=on_event)
    finally:
        run.close()


def _check_not_finished(run: RunDir, config: Config) -> SearchGraph:
    """Refuse to resume a run whose budget is spent, before its banner: say so, and how to
    give it more (a new total budget). Returns the run's graph, replayed."""
    from ..metrics import get_metric
    from ..rundir.replay import replay

    state = replay(run.journal.records, get_metric(run.spec.metric).direction)
    spent = spent_budget(config, state)
    if spent is not None:
        searched = sum(1 for n in state.graph if n.op not in (Op.REFIT, Op.EDA))
        more = f"--iterations {searched + 10}" if config.budget.iterations is not None else "--time 30m"
        raise RunError(
            f"run {run.path.name} is finished: its budget is spent ({spent}); "
            f"its final submission is {run.path / 'final' / 'submission.csv'}",
            f"give it a larger total budget: `mlguild resume {run.path} {more}`",
        )
    return state.graph


def drive(
    run: RunDir,
    *,
    dry_run: bool = False,
    brain_name: str | None = None,
    say: Say = _quiet,
    watch: Watch | None = None,
    on_event: EventHandler | None = None,
) -> Finished:
    """The composition root: wire a session for the open ``run``, run its loop, then finish
    it (the final stage and grade, the Kaggle submission at the end)."""
    cfg = run.config
    name = brain_name or resolve_brain_name(cfg.brain.name, bool(cfg.llm.models) or dry_run)
    sandbox, sandbox_line, weak = sandbox_for(cfg, name)
    if cfg.search.ray:
        from ..run.ray_workers import RaySandbox, connect

        sandbox_line += f"; scripts run on a {connect(cfg.search.ray)} ({cfg.search.workers} worker(s))"
        sandbox = RaySandbox(sandbox)
    llm = llm_for(run, name, dry_run)
    brain = brain_for(cfg, name, llm, review=not (dry_run and not cfg.llm.models))  # no stand-in reviews
    submitter = _submitter_for(run, say)
    _write_brief(run, None if dry_run else llm, say)
    _fill_ideas(run, None if dry_run else llm, say)
    session = open_session(run, brain, sandbox, on_event=on_event)
    try:
        say(f"run   {run.path}", False)
        direction = session.scorers.holdout.metric.direction
        say(
            f"task  {run.spec.name}: {run.spec.task_type}, metric {run.spec.metric} ({direction}) on a sealed holdout",
            False,
        )
        say(f"brain {brain_line(cfg, name, dry_run)}", False)
        # Its clauses are wrapped to 80 columns (under the word after "sandbox "), not by the terminal.
        width = 80 - (len("warning: ") if weak else 0)
        for i, part in enumerate(textwrap.wrap(sandbox_line, width, subsequent_indent=" " * 8, break_on_hyphens=False)):
            say(part, weak and i == 0)
        with _watching(session, watch, on_event) as handler:
            session.on_event = _with_submitter(handler, submitter)
            stop = Agent(session).run_loop()
        done = finish(session, stop)
        _write_report(run, say)
        public: dict[str, float | None] = {}
        if submitter is not None and stop.finished:
            submitter.at_end(done.choice["node"] if done.choice else session.state.best_id)
            public = submitter.public_scores()
        graph = session.state.graph
        return Finished(
            run=run,
            stop=stop,
            finish=done,
            best=graph[session.state.best_id] if session.state.best_id else None,
            searched=sum(1 for n in graph if n.op != Op.REFIT),
            scored=sum(1 for n in graph if n.ok),
            dry_run=dry_run or brain.name == "scripted",
            public_scores=public,
            common_failure="" if session.state.best_id else _common_failure(session),  # said only with no best
        )
    finally:
        session.close()


@contextmanager
def _watching(session: Session, watch: Watch | None, on_event: EventHandler | None) -> Iterator[EventHandler]:
    """The event handler for the loop: the caller's ``watch`` of the session, else ``on_event``."""
    if watch is None:
        yield on_event or session.on_event
        return
    with watch(session) as handler:
        yield handler


def _submitter_for(run: RunDir, say: Say) -> Submitter | None:
    """The Kaggle submitter when the run submits (kaggle.submit); its problems stop it now."""
    if run.config.kaggle.submit == "never":
        return None
    from ..kaggle.api import connect

    slug = kaggle_slug(run)
    if slug is None:  # before connecting: the task, not the network, is what is wrong
        raise KaggleError(
            "--submit needs a task made from a Kaggle competition",
            "make one with `mlguild init https://www.kaggle.com/competitions/NAME`, or drop --submit",
        )
    client = connect()
    limit = client.competition(slug).max_daily_submissions
    return Submitter(run, client, warn=lambda message: say(message, True), daily_limit=limit)


def _with_submitter(handler: EventHandler, submitter: Submitter | None) -> EventHandler:
    """The session's event handler: ``handler``, and ``each`` submissions of a new best."""
    if submitter is None:
        return handler

    def handle(kind: str, data: dict) -> None:
        handler(kind, data)
        if kind == Event.NODE_FINISHED and data.get("is_best"):
            submitter.on_best(data["best"])

    return handle


def _write_brief(run: RunDir, llm: LLM | None, say: Say) -> None:
    """brief.md before the first node: by the run's LLM when it has one (not a dry run's
    stand-in), by heuristics otherwise; an existing one (the user's edit) is kept."""
    _, author = ensure_brief(run.path, run.spec, run.profile, run.description, llm)
    mark_seen(run)  # as the harness leaves it: a later edit is a person's (an intervention)
    say(f"brief {brief_path(run.path)} ({'kept as found' if author == 'existing' else 'by ' + author})", False)


def _fill_ideas(run: RunDir, llm: LLM | None, say: Say) -> None:
    """The idea pool from the task's knowledge/ folder, and what earlier runs of the task learnt
    (the guild), before the first node (mlguild.pools)."""
    pools = Pools.open(run.path)
    try:
        lines = [fill_run_ideas(run, pools, llm), fill_run_guild(run, pools)]
    finally:
        pools.close()
    for line in lines:
        if line:
            say(line, False)


def _write_report(run: RunDir, say: Say) -> None:
    """The run's report.html and report.md, at the end of every session (mlguild.view.report):
    a report that cannot be written is a warning, never the run's failure."""
    from ..view.report import write_report

    try:
        written = write_report(run.path)
    except Exception as exc:  # a view's bug or a full disk must not fail a run that did its work
        say(f"no report written: {exc}", True)
        return
    say(f"report {written.files[0]}" + (f"  ({written.note})" if written.note else ""), False)


def _common_failure(session: Session) -> str:
    """The most frequent way the nodes failed, as "6 crash: TypeError in step 'columns' ..."."""
    columns = list(session.columns)
    causes = Counter(
        f"{n.status}: {diagnose(n.failure or '', '', columns).summary()}"
        for n in session.state.graph
        if not n.ok and n.op != Op.REFIT
    )
    if not causes:
        return "no node finished"
    cause, count = causes.most_common(1)[0]
    return f"most often, {count} times: {cause}"
