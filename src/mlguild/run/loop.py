"""The search loop: choose an action, propose a node, run it, record it, until a budget ends.

Everything a node goes through is ``mlguild.run.node``'s; what its proposal needs (its
context, the ideas offered it, the brain's request and review) is ``mlguild.run.propose``'s;
everything the loop shares with the workers, the fix loop and the final stage is the
session's (``mlguild.run.session``), which takes its lock itself: the loop holds none.
The journal is written before and after every node, so a hard kill loses at most the node
being executed, and a resume continues from the journal without re-running finished nodes.
"""

from __future__ import annotations

from ..core.errors import BudgetExhausted, MoveUnavailable, TaskError
from ..core.graph import Node, SearchGraph
from ..core.protocols import Action, Explorer, Fixer, Reporter
from ..core.vocabulary import Event, Op
from ..rundir import events
from ..rundir.interventions import fingerprint, interrupted
from .budget import INTERRUPTED, Stop, affordable, cheaper, mark_cut_short
from .cycle_report import ask_report
from .findings import summarise_findings
from .fix_loop import fix_loop
from .gate import unaffordable, waive_seed_checks
from .health import check_after_node
from .node import finish_node, resume_interrupted, run_node, sync_best
from .propose import context_for, propose
from .references import References
from .samples import sampled
from .session import Reserved, Session
from .workers import run_workers

__all__ = ["INTERRUPTED", "Agent", "Stop"]


class Agent:
    """The search loop over one session (``self.session``, opened by ``mlguild.launch.entry.drive``
    or ``mlguild.run.session.open_session``)."""

    def __init__(self, session: Session):
        self.session = session
        self.references = References(session)  # the baseline ladder's reference models

    def run_loop(self, workers: int | None = None) -> Stop:
        """Run nodes until a budget ends or the user interrupts; return why. Any other StopRun
        (an unusable setup, a brain that cannot produce code) is raised, once the end of the
        session is in the journal. ``workers`` (default ``search.workers``): how many nodes
        are proposed and run at once (mlguild.run.workers), each script pinned to its own CPUs."""
        s = self.session
        events.session_started(s.run.journal, resumed=s.state.sessions > 0, fingerprint=fingerprint(s.run.path))
        s.report_warnings()
        s.state.sessions += 1
        stop: Stop | None = None
        s.workers = count = workers or s.run.config.search.workers
        try:
            sync_best(s)
            for node in s.state.unfinished():  # killed mid-node last time
                resume_interrupted(s, node)
            if count <= 1:
                while True:
                    self.next_node()
            else:
                run_workers(self.next_node, count, s.interrupt)
        except BudgetExhausted as exc:
            stop = Stop("budget", exc.which)
        except KeyboardInterrupt:
            stop = INTERRUPTED
            interrupted(s.run, round(s.clock.elapsed(), 3))
        finally:
            reason = str(stop) if stop is not None else "error"
            events.session_ended(s.run.journal, reason, fingerprint(s.run.path), s.clock.elapsed())
            s.on_event(Event.SESSION_ENDED, {"reason": reason})
        return stop  # the loop ends only by an exception, and each one caught sets stop

    def next_node(self, cpus: tuple[int, ...] | None = None) -> Node:
        """Choose, propose, run and record one node (raises BudgetExhausted when none may
        start). Safe from several workers' threads: the choice and the bookkeeping are the
        session's, under its lock; the proposal and the script are not. A move the task does
        not allow (``MoveUnavailable``) is skipped, journaled, and another chosen in its place."""
        while True:
            reserved = self.session.reserve(self._choose, context_for)
            try:
                node = self._run(reserved, cpus)
                break
            except MoveUnavailable as exc:
                self.session.skip(reserved.node, reserved.action, exc)
        check_after_node(self.session)  # a broken brain, a converged search
        return node

    def step(self, action: Action, timeout: float) -> Node:
        """Propose, run and record one node for ``action`` (the policy's choice bypassed)."""
        return self._run(self.session.reserve(lambda: (action, timeout), context_for))

    def _choose(self) -> tuple[Action, float]:
        """The next action and its script's time limit (``Session.reserve`` holds the lock)."""
        s = self.session
        graph = s.state.graph
        timeout = s.clock.next_limit_s(graph)
        explore = s.run.config.brain.eda and isinstance(s.brain, Explorer) and Op.EDA not in s.state.unavailable
        if not len(graph) and explore:
            action = s.rows.assign(Action(Op.EDA, (), reason="explore the data before the first draft"), graph, None)
            return action, min(timeout, s.run.config.brain.eda_timeout_s)
        reference = self.references.next_action()  # the harness's own models first
        if reference is not None:
            return s.rows.assign(reference, graph, s.clock.remaining_s()), self.references.time_limit(timeout)
        grow = s.rows.promotion(graph, timeout, lambda n: graph.score_of(n).key())  # a sample's best, on more rows
        if grow is not None:
            return grow, timeout
        waive_seed_checks(s)  # a seed check only where its decision can still be acted on
        action = instead_of(s.policy.select(graph, len(graph)), graph, s.state.unavailable)
        action = affordable(action, graph, timeout, s.clock.full_limit_s())  # no script the time left cannot run
        action = s.rows.assign(action, graph, s.clock.remaining_s())  # a large table's row sample
        if action.op == Op.BLEND:
            try:
                return action, s.clock.next_limit_s(graph, action.parents)
            except BudgetExhausted:  # the blend's refit does not fit: a node that does, not the end
                instead = cheaper(graph, timeout, "too little for this blend and its refit")
                return s.rows.assign(instead, graph, s.clock.remaining_s()), timeout
        return action, timeout

    def _run(self, reserved: Reserved, cpus: tuple[int, ...] | None = None) -> Node:
        """Propose, run and finish the reserved node; it is in flight until this returns."""
        s, node, action = self.session, reserved.node, reserved.action
        try:
            started = s.clock.elapsed()
            proposal, failure, seed = propose(s, reserved, self.references)
            proposal = sampled(proposal, action, s.rows.n_train)  # the rows it trains on, in its meta
            brain_s = s.clock.elapsed() - started
            timeout = s.clock.within_remaining(reserved.timeout, brain_s)  # the brain's time comes out of the script's
            if failure is None:  # a script its estimated cost says cannot finish is not started
                failure = unaffordable(s, node, action, proposal, timeout)
                timeout = s.clock.within_remaining(reserved.timeout, s.clock.elapsed() - started)  # less a probe's
            refine = None
            if proposal.meta.get("cycle") and isinstance(s.brain, Fixer):  # the community cycle's refine loop
                deadline = started + brain_s + timeout
                refine = lambda first: fix_loop(s, node, first, deadline, seed, cpus)
            context = reserved.context
            recall = [*context.recall.this_run, *context.recall.other_tasks] if context and context.recall else None
            outcome = run_node(
                s, node, proposal, reason=action.reason, timeout_s=timeout, seed=seed, failure=failure, cpus=cpus,
                refine=refine, recall=recall,
            )  # fmt: skip
            if s.interrupted.is_set():  # its script was killed by the interrupt, not by itself
                raise KeyboardInterrupt
            mark_cut_short(s.clock, node, outcome, timeout)
            outcome.timing["brain_s"] = round(brain_s, 4)
            if proposal.meta.get("cycle") and isinstance(s.brain, Reporter):  # stage IV: the model writes the report
                ask_report(s, node, outcome)
            if node.op == Op.EDA:  # its output summarised once, for every later request's prefix
                summarise_findings(s, node, outcome, context)
            finish_node(s, node, outcome)
            return node
        finally:
            s.release(node)


def instead_of(action: Action, graph: SearchGraph, unavailable: dict[str, str]) -> Action:
    """``action``, or when its op cannot be made for this task the nearest move that can: an
    improvement of its first parent (the best member of a blend), else a fresh draft. A
    TaskError when not even a draft can be made: nothing is left to search with."""
    if action.op not in unavailable:
        return action
    why = f"no {action.op} for this task ({unavailable[action.op]})"
    parent = graph.nodes.get(action.parents[0]) if action.parents else None
    if parent is not None and parent.score is not None and not parent.is_blend and Op.IMPROVE not in unavailable:
        return Action(Op.IMPROVE, (parent.id,), f"{why}: improve {parent.id} instead")
    if Op.DRAFT not in unavailable:
        return Action(Op.DRAFT, (), f"{why}: a fresh draft instead")
    reasons = "; ".join(f"{op}: {reason}" for op, reason in unavailable.items())
    raise TaskError(
        f"the brain can make no move for this task ({reasons})",
        "use a brain that writes its own code (--brain llm or --brain hybrid, with an LLM configured)",
    )
