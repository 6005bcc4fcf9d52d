"""The one path a node takes: written, journaled, executed, scored, reported, finished.

Every node, whatever made it (a search node, a re-run for evidence, a final refit), goes
through ``run_node``; a node a kill interrupted is run again by ``resume_interrupted``, and
every further script of a node (a step of the community cycle's fix loop) by ``run_step``. Both write the script first, then journal
it (``node_started``, ``node_step``), and only then run it: the journal is first, so a kill
at any moment leaves a record a resume can act on. ``finish_node`` then scores nothing
itself (the executor scored the outputs on sealed labels) but records the outcome: the
node's report, the pools, the journal's ``node_finished``, the memory and best/. A fall
back to a refine loop's earlier step (``fall_back``) is journaled here too, and a script that
changed the scorer's files finishes its node here (``_execute``) before the run stops.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..core.errors import ScorerIntegrityError
from ..core.graph import Node
from ..core.protocols import Proposal
from ..core.vocabulary import Event, FailureKind, Op, Status
from ..rundir import results
from ..rundir.interventions import mark_seen
from ..rundir.records import (
    Outcome,
    apply_outcome,
    record_best,
    record_finished,
    record_restarted,
    record_started,
    record_step,
    record_step_script,
)
from ..scoring.integrity import PACKAGE_DIR, SOURCES
from ..task.brief import add_findings
from ..util.fs import atomic_write, read_no_follow, read_text_no_follow, sha256_text
from .budget import MIN_SCRIPT_S, mark_cut_short
from .refit import growth
from .reserve import refit_scale
from .samples import sample_dir
from .session import Session
from .steps import kept_outcome, kept_outputs, kept_step, score_once
from .workers import current_worker

# What the loop does with a node's first outcome before it is finished: the community cycle's
# refine loop, given that first run checked, not scored, and scoring the node's final script.
Refine = Callable[[Outcome], Outcome]
STEP_LOGS = ("solution.py", "stdout.txt", "stderr.txt")  # what a refine-loop step keeps beside its outputs


def run_node(
    session: Session,
    node: Node,
    proposal: Proposal,
    *,
    reason: str,
    timeout_s: float,
    seed: int,
    failure: Outcome | None = None,
    data_dir: Path | None = None,
    cpus: tuple[int, ...] | None = None,
    refine: Refine | None = None,
    recall: list[str] | None = None,
) -> Outcome:
    """Write ``node``'s proposal, journal ``node_started``, then run its script (unless
    ``failure``: the proposal itself failed, and that is the outcome) and return the
    outcome, refined by ``refine`` when given (the first run is then checked, not scored:
    ``refine`` scores the node's final script once). The caller finishes the node
    (``finish_node``), once it has added what it knows to the outcome. ``recall``: the
    memory records the brain was shown (journaled for the views)."""
    with session.lock:
        node.plan, node.meta = proposal.plan, proposal.meta
        node.title = proposal.title  # empty: record_started takes it from the plan
        session.executor.write_proposal(node, proposal.plan, proposal.code, proposal.meta)
        node.attempts, node.code_sha256 = 1, sha256_text(proposal.code)
        record_started(session.run.journal, node, reason, session.clock.elapsed(), current_worker(), recall)
    if failure is not None:
        return failure
    outcome = _execute(session, node, timeout_s, seed=seed, data_dir=data_dir, cpus=cpus, score=refine is None)
    return refine(outcome) if refine is not None else outcome


def resume_interrupted(session: Session, node: Node) -> None:
    """Run again, once and unchanged, a node a kill interrupted: journal the second attempt
    (``node_started`` with ``restart``), run its script as it is on disk, and finish it. A
    second interruption, a script that changed since it was proposed, a refit (the final
    stage reruns its refits) or no time left finishes it as ``interrupted`` instead. A node
    the kill caught refining a working step (the community cycle's refine loop) ends by the
    loop's rule: its step run again is checked, and if it does not work the node falls back
    to the working step (``settle_resumed``, with what mlguild.run.steps kept); its final
    script is scored once."""
    kept = kept_step(session.run.node_dir(node.id))
    outcome = _run_again(session, node, score=kept is None)
    if kept is not None:
        outcome = settle_resumed(session, node, kept, outcome)
    finish_node(session, node, outcome)


def _run_again(session: Session, node: Node, score: bool = True) -> Outcome:
    killed = "the run was killed while this node ran"
    if node.op == Op.REFIT:
        return Outcome(FailureKind.INTERRUPTED, failure="the run was killed during the final refit")
    code = session.code(node)
    if node.attempts >= 2:
        return Outcome(FailureKind.INTERRUPTED, failure=f"{killed}, twice")
    if not code.strip() or sha256_text(code) != node.code_sha256:
        why = "before its code was complete, or its solution.py changed since it was proposed"
        return Outcome(FailureKind.INTERRUPTED, failure=f"{killed}, {why}")
    remaining = session.clock.remaining_s()
    if remaining is not None and remaining < MIN_SCRIPT_S:
        return Outcome(FailureKind.INTERRUPTED, failure=f"{killed}, and no time is left")
    record_restarted(session.run.journal, node, session.clock.elapsed())
    # The limit the uninterrupted run would have given it (only the time budget applies:
    # the node is already counted in the iteration budget).
    timeout = session.clock.full_limit_s()
    timeout = timeout if remaining is None else min(timeout, remaining)
    seed = int(node.meta.get("seed", session.run.config.brain.seed))  # a re-run keeps its own seed
    outcome = _execute(session, node, timeout, seed=seed, score=score)
    mark_cut_short(session.clock, node, outcome, timeout)
    return outcome


def run_step(
    session: Session,
    node: Node,
    step: int,
    code: str,
    why: str,
    timeout_s: float,
    seed: int,
    cpus: tuple[int, ...] | None = None,
    score: bool = True,
) -> Outcome:
    """Run ``code`` as the node's next script (a step of its refine loop): write it, journal
    ``node_step`` with its hash, then run it (``score`` False: checked, not scored)."""
    with session.lock:
        node.code_sha256 = sha256_text(code)
        session.executor.write_proposal(node, node.plan, code, node.meta)
        record_step_script(session.run.journal, node, step, why.strip()[:500])
    return _execute(session, node, timeout_s, seed=seed, cpus=cpus, score=score)


def fall_back(session: Session, node: Node, node_dir: Path, kept: int, last: int, outcome: Outcome) -> None:
    """Make step ``kept``'s script, logs and outputs the node's again, after step ``last``
    (which ended as ``outcome``) did not work: journaled first, as every script of a node is."""
    folder = node_dir / "steps" / f"{kept:02d}"
    code = read_text_no_follow(folder / "solution.py")
    why = f"step {last} ended as {outcome.status}: the node keeps step {kept}'s script"
    with session.lock:
        node.code_sha256 = sha256_text(code)
        record_step_script(session.run.journal, node, kept, why, restored=True)
    for name in STEP_LOGS:
        atomic_write(node_dir / name, read_no_follow(folder / name))
    shutil.rmtree(node_dir / "output", ignore_errors=True)
    (folder / "output").rename(node_dir / "output")
    node.meta["final_step"] = kept


def settle_resumed(session: Session, node: Node, kept: int, outcome: Outcome) -> Outcome:
    """The outcome of a node a kill interrupted while it refined working step ``kept``, given
    what its interrupted step did when run again (``outcome``: checked, not scored). As in the
    loop: a step that worked is the node's; one that did not falls back to step ``kept``. The
    node's final script is scored once."""
    node_dir = session.run.node_dir(node.id)
    journaled = [r["step"] for r in session.run.journal.records if r["type"] == Event.NODE_STEP and r["id"] == node.id]
    last = journaled[-1] if journaled else 1  # the step the kill interrupted
    node.meta["steps"] = last
    if outcome.status == Status.CHECKED:
        record_step(session.run, node, last, outcome)
        shutil.rmtree(kept_outputs(node_dir, kept), ignore_errors=True)
        return score_once(session, node, node_dir, outcome)
    if last != kept:  # the step as it ended (a kill before its record leaves ``kept``'s own)
        record_step(session.run, node, last, outcome)
    fall_back(session, node, node_dir, kept, last, outcome)
    return score_once(session, node, node_dir, kept_outcome(node_dir / "steps" / f"{kept:02d}"))


def _execute(
    session: Session,
    node: Node,
    timeout_s: float,
    *,
    seed: int,
    data_dir: Path | None = None,
    cpus: tuple[int, ...] | None = None,
    score: bool = True,
) -> Outcome:
    """Run the node's written script (mlguild.run.executor); a script that changed the scorer's
    files finishes its node as ``scorer_tampered`` (report, journal) and stops the run, named."""
    rows = node.meta.get("train_rows")
    if data_dir is None and rows and node.op != Op.REFIT:  # a large table's row sample (mlguild.run.samples)
        data_dir = sample_dir(session.run, int(rows))
    outcome = session.executor.execute(node, timeout_s, seed=seed, data_dir=data_dir, cpus=cpus, score=score)
    if outcome.status != FailureKind.SCORER_TAMPERED:
        return outcome
    session.executor.write_report(node, outcome)
    record_finished(session.run.journal, node, outcome)
    layer = outcome.exec.get("layer") or "?"
    hint = "; the local layer cannot stop this: use --sandbox bwrap" if layer == "local" else ""
    raise ScorerIntegrityError(
        f"node {node.id} changed the scorer's source files while its script ran ({layer} sandbox layer); "
        f"the run stopped, and the node is recorded as {FailureKind.SCORER_TAMPERED}",
        fix=f"restore {', '.join(SOURCES)} in {PACKAGE_DIR} (e.g. reinstall "
        f"mlguild), then `mlguild resume {session.run.path}`{hint}",
    )


def finish_node(session: Session, node: Node, outcome: Outcome) -> None:
    """Record ``outcome`` as ``node``'s end: its report (and for a search node, its entry in
    the pools), the journal's ``node_finished``, what an exploration found (into the brief),
    the memory's record, and best/ when the node is the new best. Holds the session's lock."""
    with session.lock:
        _finish(session, node, outcome)


def _finish(session: Session, node: Node, outcome: Outcome) -> None:
    started = time.monotonic()
    apply_outcome(node, outcome)  # the report compares the node with its parent and the best
    graph = session.state.graph
    # "worker-2" (mlguild.run.workers), or "MainThread"
    worker = threading.current_thread().name.removeprefix("mlguild-")
    report = session.pools.node_finished(node, graph, worker)  # what the other nodes read
    session.executor.write_report(node, outcome, graph, report.markdown() if report else [])
    outcome.timing["harness_s"] = round(outcome.timing.get("harness_s", 0.0) + time.monotonic() - started, 4)
    record_finished(session.run.journal, node, outcome, session.clock.elapsed())
    results.append(session.run.path, node, session.run.journal.records)
    if node.op == Op.REFIT:  # the final stage's: nothing for the search to learn or promote
        remember_refit(session, node)
        return
    if node.op == Op.EDA:  # a failed exploration passes on what it printed, with its error
        stdout = read_text_no_follow(session.run.node_dir(node.id) / "stdout.txt")
        failure = "" if node.status == Status.EXPLORED else f"{node.status}: {node.failure or ''}"
        if add_findings(session.run.path, node.id, stdout, failure):
            mark_seen(session.run)  # the harness's own edit of the brief, not a person's
        session.contexts.brief = None  # the next proposal reads the brief with the findings
    # A re-run repeats its node, a node not started for its cost never ran: nothing to remember.
    # A grow is a node's script on more rows: its record is the node's.
    if node.op not in (Op.RERUN, Op.GROW, Op.EDA) and node.status != FailureKind.OVER_BUDGET:
        session.memory.record(node, graph, "" if node.ok else session.code(node), session.columns)
        session.report_warnings()
    is_best = sync_best(session)
    session.on_event(Event.NODE_FINISHED, {"node": node, "best": session.state.best_id, "is_best": is_best})


def remember_refit(session: Session, refit: Node) -> None:
    """Keep what a final refit measured, its scale (mlguild.run.reserve), in the memory:
    the next run's reserve for a refit of that family starts from it."""
    original = session.state.graph.nodes.get(str(refit.meta.get("refit_of")))
    scale = refit_scale(refit, original, growth(session.run)) if original is not None else None
    if original is not None and scale is not None:
        family = session.clock.scales.family(original)
        session.memory.keep_refit(refit.id, family, session.run.profile.n_train, round(scale, 4))


def sync_best(session: Session) -> bool:
    """Make best/ hold the graph's best node. Also repairs a kill between node_finished and
    best_changed: the journal says which node is best only once best/ really holds it."""
    state = session.state
    best = state.graph.best()
    if best is None or best.id == state.best_id:
        return False
    _promote(session, best)
    state.best_id = best.id
    record_best(session.run.journal, best, session.clock.elapsed())
    return True


def _promote(session: Session, node: Node) -> None:
    """Copy the node's solution, submission and report into best/ (each file atomically)."""
    run = session.run
    src, best = run.node_dir(node.id), run.best_dir
    for name, dest in (
        ("solution.py", "solution.py"),
        ("report.md", "report.md"),
        ("output/submission.csv", "submission.csv"),
        ("output/holdout.csv", "holdout.csv"),
    ):
        atomic_write(best / dest, read_no_follow(src / name))
    atomic_write(best / "plan.md", node.plan.strip() + "\n")
    record = {"node": node.id, "holdout_score": node.score, "metric": session.scorers.holdout.metric.name}
    if node.holdout_score is not None:  # it ranks by its pooled score (a small holdout)
        record.update(holdout_score=node.holdout_score, pooled_score=node.score)
    atomic_write(best / "best.json", json.dumps(record, indent=2))
