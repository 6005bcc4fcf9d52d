"""The search loop: choose an action, propose a node, run it, record it, until a budget ends.

Everything a node goes through is ``mlguild.run.node``'s; everything the loop shares with
the workers, the fix loop and the final stage is the session's (``mlguild.run.session``).
The journal is written before and after every node, so a hard kill loses at most the node
being executed, and a resume continues from the journal without re-running finished nodes.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.errors import BudgetExhausted, MoveUnavailable, ProposalFailed, StopRun, TaskError
from ..core.graph import Node, SearchGraph
from ..core.protocols import Action, Brain, Context, Explorer, Fixer, Policy, Proposal, Reporter, Reviewer, Sandbox
from ..core.vocabulary import Event, FailureKind, Op
from ..pools.ideas import idea_ids
from ..rundir import events
from ..rundir.folder import RunDir
from ..rundir.interventions import fingerprint, interrupted
from ..rundir.records import Outcome
from ..search.evidence import converged
from ..util.fs import sha256_text
from .budget import INTERRUPTED, Stop, affordable, mark_cut_short
from .context import offer
from .cycle_report import ask_report
from .fix_loop import fix_loop
from .health import check_brain_health
from .node import finish_node, resume_interrupted, run_node, sync_best
from .references import References
from .session import EventHandler, Session
from .workers import run_workers

__all__ = ["INTERRUPTED", "Agent", "Stop"]

# How often the brain is asked again for a node whose proposal repeats a node's code; then
# the node is recorded as a duplicate, its script not run (a deterministic brain given the
# same graph can only repeat itself).
DUPLICATE_RETRIES = 2


class Agent:
    """The search loop over one session (``self.session``)."""

    def __init__(
        self, run: RunDir, brain: Brain, policy: Policy, sandbox: Sandbox, on_event: EventHandler | None = None
    ):
        self.session = Session(run, brain, policy, sandbox, on_event)
        self.references = References(self.session)  # the baseline ladder's reference models
        self.workers = 1  # run_loop's: several workers never run one script twice (_claim)

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
        count = workers or s.run.config.search.workers
        self.workers = count
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
        start). Safe from several workers' threads: the choice and the bookkeeping hold the
        session's lock, the proposal and the script do not. A move the task does not allow
        (``MoveUnavailable``) is skipped, journaled, and another chosen in its place."""
        s = self.session
        while True:
            with s.lock:
                action, timeout = self._choose()
                node, context = self._reserve(action, timeout)
            try:
                node = self._run_reserved(node, action, context, timeout, cpus)
                break
            except MoveUnavailable as exc:
                with s.lock:
                    self._skip(node, action, exc)
        with s.lock:
            check_brain_health(s)
            if s.run.config.search.stop_on_convergence:
                why = converged(s.state.graph, s.run.config.search)
                if why is not None:
                    s.on_event("warning", {"message": f"converged: {why}"})
                    raise BudgetExhausted("converged")
        return node

    def _choose(self) -> tuple[Action, float]:
        """The next action and its script's time limit. Called with the lock held."""
        s = self.session
        graph = s.state.graph
        timeout = s.clock.next_limit_s(graph)
        explore = s.run.config.brain.eda and isinstance(s.brain, Explorer) and Op.EDA not in s.state.unavailable
        if not len(graph) and explore:
            action = Action(Op.EDA, (), reason="explore the data before the first draft")
            return action, min(timeout, s.run.config.brain.eda_timeout_s)
        reference = self.references.next_action()  # the harness's own models first
        if reference is not None:
            return reference, self.references.time_limit(timeout)
        action = instead_of(s.policy.select(graph, len(graph)), graph, s.state.unavailable)
        action = affordable(action, graph, timeout, s.clock.full_limit_s())  # no script the time left cannot run
        if action.op == Op.BLEND:
            timeout = s.clock.next_limit_s(graph, action.parents)
        return action, timeout

    def _skip(self, node: Node, action: Action, exc: MoveUnavailable) -> None:
        """Take the reserved ``node`` out (it never started) and record that ``action``'s op
        cannot be made for this task, so that it is not chosen again. Lock held."""
        s = self.session
        s.state.graph.nodes.pop(node.id, None)
        s.state.unavailable.setdefault(action.op, exc.message)
        events.move_skipped(s.run.journal, action.op, list(action.parents), exc.message, exc.fix, s.clock.elapsed())
        fix = f" ({exc.fix})" if exc.fix else ""
        s.on_event(
            "warning", {"message": f"no {action.op} for this task, the search goes on without: {exc.message}{fix}"}
        )

    def step(self, action: Action, timeout: float) -> Node:
        """Propose, run and record one node for ``action`` (the policy's choice bypassed)."""
        with self.session.lock:
            node, context = self._reserve(action, timeout)
        return self._run_reserved(node, action, context, timeout)

    def _reserve(self, action: Action, timeout: float) -> tuple[Node, Context | None]:
        """The node for ``action``, in the graph at once as pending (other workers' choices
        see it in flight), and what its brain will see. Called with the lock held."""
        s = self.session
        graph = s.state.graph
        node = Node(id=graph.next_id(), op=action.op, parents=action.parents, iteration=len(graph))
        context = None if action.op == Op.RERUN else s.contexts.build(graph, action, node.iteration, timeout, node.id)
        if context is not None:
            offer(node, context)  # seen by the other workers' idea selection while this node is in flight
        graph.add(node)
        s.clock.in_flight[node.id] = timeout  # its refit is kept back while it runs (_run_reserved)
        s.on_event("node_proposing", {"id": node.id, "op": action.op, "reason": action.reason})
        return node, context

    def _run_reserved(
        self, node: Node, action: Action, context: Context | None, timeout: float, cpus: tuple[int, ...] | None = None
    ) -> Node:
        try:
            return self._run_in_flight(node, action, context, timeout, cpus)
        finally:
            with self.session.lock:
                self.session.clock.in_flight.pop(node.id, None)

    def _run_in_flight(
        self, node: Node, action: Action, context: Context | None, timeout: float, cpus: tuple[int, ...] | None
    ) -> Node:
        s = self.session
        started = s.clock.elapsed()
        proposal, failure, seed = self._propose(node, action, context, timeout)
        if "ideas_offered" in node.meta and "ideas_offered" not in proposal.meta:  # a failed proposal's offer
            proposal = replace(proposal, meta={**proposal.meta, "ideas_offered": node.meta["ideas_offered"]})
        brain_s = s.clock.elapsed() - started
        timeout = s.clock.within_remaining(timeout, brain_s)  # the brain's own time comes out of the script's
        refine = None
        if proposal.meta.get("cycle") and isinstance(s.brain, Fixer):  # the community cycle's refine loop
            deadline = started + brain_s + timeout
            refine = lambda first: fix_loop(s, node, first, deadline, seed, cpus)
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
        with s.lock:
            finish_node(s, node, outcome)
        return node

    def _propose(
        self, node: Node, action: Action, context: Context | None, timeout: float
    ) -> tuple[Proposal, Outcome | None, int]:
        """(the proposal, the outcome when the proposal itself failed, the script's seed). A
        StopRun takes the reserved node out of the graph and is raised; any other failure
        of the brain becomes the node's outcome, named for the next prompt. With several
        workers, a proposal repeating a node's code is sent back (``_claim``)."""
        s = self.session
        seed = s.run.config.brain.seed
        try:
            if action.op == Op.RERUN:  # the same script with another seed: no brain involved
                with s.lock:
                    seed += 1 + len(s.state.graph.rerun_groups().get(action.parents[0], []))
                    return self._rerun_proposal(action.parents[0], seed), None, seed
            if action.reference:  # the harness's script, not the brain's: nothing to review
                return self.references.proposal(action), None, seed
            assert context is not None
            proposal = self._ask(action, context)
            twin = self._claim(node, proposal)
            for _ in range(DUPLICATE_RETRIES):  # asked again, now seeing the twin in its history
                if twin is None:
                    break
                with s.lock:
                    context = s.contexts.build(s.state.graph, action, node.iteration, timeout, node.id)
                    offer(node, context)
                proposal = self._ask(action, context)
                twin = self._claim(node, proposal)
            if twin is None:
                return self._reviewed(action, context, proposal), None, seed
            failure = Outcome(
                FailureKind.DUPLICATE, failure=f"its code is {twin}'s, already run or running: not run again"
            )
        except (StopRun, MoveUnavailable):  # a spent budget or an unusable setup stops the run, said
            # clearly; a move the task does not allow is skipped by next_node
            with s.lock:
                s.state.graph.nodes.pop(node.id, None)  # never started: as if never chosen
            raise
        except ProposalFailed as exc:  # an LLM request or a reply failed: named for the next prompt
            failed_as, why, partial = exc.as_record()
            proposal, failure = Proposal(plan=f"({failed_as}: {why})", code=partial), Outcome(failed_as, failure=why)
        except Exception as exc:  # a brain bug must not end the run
            proposal = Proposal(f"(the brain failed: {exc})", "")
            failure = Outcome(FailureKind.BRAIN_ERROR, failure=f"{type(exc).__name__}: {exc}")
        failure.timing = {"exec_s": 0.0, "harness_s": 0.0}
        return proposal, failure, seed

    def _ask(self, action: Action, context: Context) -> Proposal:
        """The brain's proposal for ``action`` (its exploration, for an exploratory node)."""
        s = self.session
        with s.brain_lock:
            if action.op == Op.EDA and isinstance(s.brain, Explorer):
                return s.brain.explore(context)
            proposal = s.brain.propose(action, context)
        if not context.ideas:
            return proposal
        return replace(proposal, meta={**proposal.meta, "ideas_offered": idea_ids(context.ideas)})  # journaled

    def _reviewed(self, action: Action, context: Context, proposal: Proposal) -> Proposal:
        """The proposal to run: a ``Reviewer`` brain's LLM reads it first (and sends it back
        once for a serious finding; mlguild.brains.llm.review)."""
        s = self.session
        if not isinstance(s.brain, Reviewer):
            return proposal
        with s.brain_lock:
            return s.brain.review(action, context, proposal)

    def _claim(self, node: Node, proposal: Proposal) -> str | None:
        """With several workers: the node whose script is ``proposal``'s code (finished or in
        flight), or None, and then the code is ``node``'s at once: a second worker proposing
        it meanwhile finds this node. Two workers choosing alike from the same graph must not
        buy the same node twice."""
        if self.workers <= 1 or not proposal.code.strip():
            # One worker keeps its old behaviour: its repeats are a brain's own choice, made
            # knowing the graph (and what tests replay); no code: the outcome is a failure.
            return None
        code_sha256 = sha256_text(proposal.code)
        with self.session.lock:
            twin = next(
                (
                    n.id
                    for n in self.session.state.graph
                    # a recorded duplicate carries its twin's hash: name the node that ran
                    if n.id != node.id and n.code_sha256 == code_sha256 and n.status != FailureKind.DUPLICATE
                ),
                None,
            )
            if twin is None:
                node.code_sha256, node.plan, node.meta = code_sha256, proposal.plan, proposal.meta
        return twin

    def _rerun_proposal(self, candidate: str, seed: int) -> Proposal:
        plan = (
            f"## Re-run of {candidate} with seed {seed}\n\nThe script of `{candidate}`, unchanged: it beats the "
            "best node by less than the noise margin, so it is promoted only if its mean over seeds is better.\n"
        )
        code = self.session.code(self.session.state.graph[candidate])
        return Proposal(plan, code, {"rerun_of": candidate, "seed": seed}, title=f"Re-run of {candidate}, seed {seed}")


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
