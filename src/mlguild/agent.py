"""The agent loop: select an action, propose, execute, score, record — until a budget ends.

The journal is written before and after every node, so a hard kill loses at most the node
being executed, and ``resume`` continues from the journal without re-running finished nodes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from .brief import add_findings
from .config import mlguild_home
from .context import ContextBuilder
from .diagnose import Diagnosis, diagnose
from .errors import BrainBroken, BudgetExhausted, ProposalFailed, StopRun
from .executor import NodeRunner, Outcome
from .fix_loop import MIN_SCRIPT_S, fix_loop
from .fsutil import atomic_write, read_no_follow, read_text_no_follow, sha256_text
from .memory import Memory, TaskTraits
from .metrics import get_metric
from .pools import Pools
from .protocols import LAST_RESORT, Action, Brain, Context, Policy, Proposal, Sandbox
from .records import apply_outcome, record_finished, record_restarted, record_started
from .refit import refit_reserve
from .rundir import RunDir
from .sandbox.base import ExecStatus
from .scorer import fingerprint, scorers_for
from .search.evidence import converged
from .search.graph import Evidence, Node
from .state import RunState, replay
from .vocabulary import BLEND, EDA, EXPLORED, NO_CODE, REFIT, RERUN
from .workers import current_worker, run_workers


@dataclass(frozen=True)
class Stop:
    """Why the loop stopped: a budget ended (``which``: time, iterations, llm_tokens,
    llm_cost), or the user interrupted it. Only a run that ended by its budget is finished:
    one that was interrupted can still be resumed, and find a better node."""

    kind: str  # "budget" | "interrupted"
    which: str = ""

    @property
    def finished(self) -> bool:
        return self.kind == "budget"

    def __str__(self) -> str:
        return f"budget: {self.which}" if self.finished else "interrupted by user"


INTERRUPTED = Stop("interrupted")


class Agent:
    def __init__(
        self,
        run: RunDir,
        brain: Brain,
        policy: Policy,
        sandbox: Sandbox,
        on_event: Callable[[str, dict], None] | None = None,
    ):
        self.run = run
        self.brain = brain
        self.policy = policy
        self.state: RunState = replay(run.journal.records, get_metric(run.spec.metric).direction)
        search = run.config.search
        if search.evidence_reruns:  # the best node is promoted by evidence (mlguild.search.evidence)
            self.state.graph.evidence = Evidence(search.evidence_reruns, search.evidence_z, search.assumed_noise)
        self.scorers = scorers_for(run, self.state.scorer_fingerprint or fingerprint())
        self.runner = NodeRunner(run, sandbox, self.scorers)
        self.on_event = on_event or (lambda kind, data: None)
        self._session_start = time.monotonic()
        # The graph, the journal's order, the memory, the pools and best/ are shared by the
        # workers' threads (mlguild.workers): each change holds this lock.
        self.lock = threading.RLock()
        self._brain_lock = threading.Lock() if not getattr(brain, "concurrent", False) else nullcontext()
        self.interrupted = threading.Event()  # the user stopped the run: workers leave their nodes unfinished
        self._columns = tuple(c.name for c in run.profile.columns)
        traits = TaskTraits.of(run.spec.public_dict(), run.profile.to_dict())
        self.memory = Memory.open(run.path.name, run.spec.name, traits, run.config.memory, mlguild_home())
        self.memory.replay(self.state.graph, self._code, self._columns)
        self.pools = Pools.open(run.path)
        self.pools.reports.sync(self.state.graph)  # a resume: the nodes a kill left unreported
        self.contexts = ContextBuilder(run, self.memory, self.scorers.holdout.metric.direction, self.pools)

    # --- budget ---
    def elapsed(self) -> float:
        return time.monotonic() - self._session_start

    def remaining_s(self) -> float | None:
        budget = self.run.config.budget.time_s
        return None if budget is None else budget - self.state.spent_s - self.elapsed()

    def _check_budget(self, planned_blend: tuple[str, ...] = ()) -> float:
        """Raise BudgetExhausted, or return the timeout the next script may have. With
        ``planned_blend`` (the members of a fuse about to be made), the time its refit would
        need is kept back too: a blend made in the last minutes must still be refitted."""
        budget = self.run.config.budget
        # Refits are the final stage and an exploratory node the preparation: neither is the search.
        searched = sum(1 for n in self.state.graph if n.op not in (REFIT, EDA))
        if budget.iterations is not None and searched >= budget.iterations:
            raise BudgetExhausted("iterations")
        timeout = self._full_limit_s()
        remaining = self.remaining_s()
        if remaining is not None and budget.time_s is not None:  # both or neither (remaining_s)
            # Keep back the time the final refit of the current best node will need.
            remaining -= refit_reserve(self.run, self.state.graph, self.state.graph.best(), planned_blend)
            if remaining < MIN_SCRIPT_S:
                raise BudgetExhausted("time")
            timeout = min(timeout, remaining)
        return timeout

    def _full_limit_s(self) -> float:
        """The time limit a script gets while the run's end is not near."""
        budget = self.run.config.budget
        limit = self.run.config.sandbox.script_timeout_s
        if budget.time_s is not None:
            limit = min(limit, max(MIN_SCRIPT_S, budget.script_share * budget.time_s))
        return limit

    def _mark_cut_short(self, node: Node, outcome: Outcome, timeout: float) -> None:
        """A script that timed out under a limit the run's end had shortened says nothing
        about its change: the timing says so, and neither this run's move estimates nor the
        memory count it as the change failing."""
        if outcome.status == ExecStatus.TIMEOUT.value and node.op != EDA and timeout < self._full_limit_s():
            outcome.timing["cut_short"] = True

    # --- the loop ---
    def run_loop(self, workers: int | None = None) -> Stop:
        """Run nodes until a budget ends or the user interrupts; return why. Any other StopRun
        (an unusable setup, a brain that cannot produce code) is raised, once the end of the
        session is in the journal. ``workers`` (default ``search.workers``): how many nodes
        are proposed and run at once (mlguild.workers), each script pinned to its own CPUs."""
        journal = self.run.journal
        journal.append("session_started", resumed=self.state.sessions > 0, session_elapsed_s=0.0)
        self._report_memory_warnings()
        self.state.sessions += 1
        stop: Stop | None = None
        count = workers or self.run.config.search.workers
        try:
            self._sync_best()
            for node in self.state.unfinished():  # killed mid-node last time
                self._finish_interrupted(node)
            if count <= 1:
                while True:
                    self.next_node()
            else:
                run_workers(self, count)
        except BudgetExhausted as exc:
            stop = Stop("budget", exc.which)
        except KeyboardInterrupt:
            stop = INTERRUPTED
        finally:
            reason = str(stop) if stop is not None else "error"
            journal.append("session_ended", reason=reason, session_elapsed_s=round(self.elapsed(), 3))
            self.on_event("session_ended", {"reason": reason})
        return stop  # the loop ends only by an exception, and each one caught sets stop

    def next_node(self, cpus: tuple[int, ...] | None = None) -> Node:
        """Choose, propose, run and record one node (raises BudgetExhausted when none may
        start). Safe from several workers' threads: the choice and the bookkeeping hold the
        agent's lock, the proposal and the script do not."""
        with self.lock:
            timeout = self._check_budget()
            if self._explores_first():
                action = Action(EDA, (), reason="explore the data before the first draft")
                timeout = min(timeout, self.run.config.brain.eda_timeout_s)
            else:
                action = self.policy.select(self.state.graph, len(self.state.graph))
                if action.op == BLEND:
                    timeout = self._check_budget(action.parents)
            node, context = self._reserve(action, timeout)
        node = self._run_reserved(node, action, context, timeout, cpus)
        with self.lock:
            self._check_brain_health()
            if self.run.config.search.stop_on_convergence:
                why = converged(self.state.graph, self.run.config.search)
                if why is not None:
                    self.on_event("warning", {"message": f"converged: {why}"})
                    raise BudgetExhausted("converged")
        return node

    def _explores_first(self) -> bool:
        """An exploratory node comes first when the brain can write one (it has an LLM)."""
        return not len(self.state.graph) and self.run.config.brain.eda and bool(getattr(self.brain, "explores", False))

    def _check_brain_health(self) -> None:
        """Stop a run that can only burn its budget: the brain produces no code, or every node
        fails in exactly the same way (a broken environment, not a bad idea)."""
        limit = self.run.config.search.max_same_failures
        recent = list(self.state.graph)[-limit:]
        if len(recent) < limit or any(n.ok for n in recent):
            return
        fix = f"see `mlguild show {recent[-1].id} --run {self.run.path}`"
        if all(n.status in NO_CODE for n in recent):
            raise BrainBroken(
                f"the last {limit} proposals produced no code (last: {recent[-1].failure})",
                f"{fix}; check the model and its settings",
            )
        columns = [c.name for c in self.run.profile.columns]
        causes = {n.id: diagnose(n.failure or "", self._code(n), columns) for n in recent}
        if len({(n.status, causes[n.id].signature()) for n in recent}) > 1:
            return
        # The brain's safest pipeline gets its chance first: a repair may still get past this.
        if getattr(self.brain, "has_last_resort", False) and not any(n.meta.get(LAST_RESORT) for n in recent):
            return
        cause = causes[recent[-1].id]
        raise BrainBroken(
            f"the last {limit} nodes all failed the same way"
            f"{', the safest pipeline included' if any(n.meta.get(LAST_RESORT) for n in recent) else ''}: "
            f"{recent[-1].status}, {cause.summary()}",
            _fix_for(cause, self.run, fix),
        )

    def _code(self, node: Node) -> str:
        return read_text_no_follow(self.run.node_dir(node.id) / "solution.py")

    def step(self, action: Action, timeout: float) -> Node:
        """Propose, run and record one node for ``action`` (the policy's choice bypassed)."""
        with self.lock:
            node, context = self._reserve(action, timeout)
        return self._run_reserved(node, action, context, timeout)

    def _reserve(self, action: Action, timeout: float) -> tuple[Node, Context | None]:
        """The node for ``action``, in the graph at once as pending (other workers' choices
        see it in flight), and what its brain will see. Called with the lock held."""
        graph = self.state.graph
        node = Node(id=graph.next_id(), op=action.op, parents=action.parents, iteration=len(graph))
        context = None if action.op == RERUN else self.contexts.build(graph, action, node.iteration, timeout)
        graph.add(node)
        self.on_event("node_proposing", {"id": node.id, "op": action.op, "reason": action.reason})
        return node, context

    def _run_reserved(
        self, node: Node, action: Action, context: Context | None, timeout: float, cpus: tuple[int, ...] | None = None
    ) -> Node:
        started = time.monotonic()
        failed_as, failure = "", None
        seed = self.run.config.brain.seed
        try:
            if action.op == RERUN:  # the same script with another seed: no brain involved
                with self.lock:
                    seed += 1 + len(self.state.graph.rerun_groups().get(action.parents[0], []))
                    proposal = self._rerun_proposal(action.parents[0], seed)
            else:
                assert context is not None
                with self._brain_lock:
                    proposal = self.brain.propose(action, context)
        except StopRun:  # a spent budget or an unusable setup stops the run, said clearly
            with self.lock:
                self.state.graph.nodes.pop(node.id, None)  # never started: as if never chosen
            raise
        except ProposalFailed as exc:  # an LLM request or a reply failed: named for the next prompt
            failed_as, failure, partial = exc.as_record()
            proposal = Proposal(plan=f"({failed_as}: {failure})", code=partial)
        except Exception as exc:  # a brain bug must not end the run
            failed_as, failure = "brain_error", f"{type(exc).__name__}: {exc}"
            proposal = Proposal(plan=f"(the brain failed: {exc})", code="")
        brain_s = time.monotonic() - started
        with self.lock:
            remaining = self.remaining_s()
            if remaining is not None:  # the brain's own time comes out of the script's
                timeout = max(1.0, min(timeout, remaining))
            node.plan, node.meta = proposal.plan, proposal.meta
            node.title = proposal.title  # empty: record_started takes it from the plan
            self.runner.write_proposal(node, proposal.plan, proposal.code, proposal.meta)
            node.attempts, node.code_sha256 = 1, sha256_text(proposal.code)
            recall = [*context.recall.this_run, *context.recall.other_tasks] if context and context.recall else None
            record_started(self.run.journal, node, action.reason, self.elapsed(), current_worker(), recall)
        if failure is not None:
            outcome = Outcome(failed_as, failure=failure, timing={"exec_s": 0.0, "harness_s": 0.0})
        else:
            outcome = self.runner.execute(node, timeout, seed=seed, cpus=cpus)
            if node.meta.get("cycle") and hasattr(self.brain, "fix_step"):
                outcome = fix_loop(self, node, outcome, started + brain_s + timeout, seed, cpus)
        if self.interrupted.is_set():  # its script was killed by the interrupt, not by itself
            raise KeyboardInterrupt
        self._mark_cut_short(node, outcome, timeout)
        outcome.timing["brain_s"] = round(brain_s, 4)
        with self.lock:
            self._finish(node, outcome)
        return node

    def _rerun_proposal(self, candidate: str, seed: int) -> Proposal:
        plan = (
            f"## Re-run of {candidate} with seed {seed}\n\nThe script of `{candidate}`, unchanged: it beats the "
            "best node by less than the noise margin, so it is promoted only if its mean over seeds is better.\n"
        )
        meta = {"rerun_of": candidate, "seed": seed}
        return Proposal(
            plan, self._code(self.state.graph[candidate]), meta, title=f"Re-run of {candidate}, seed {seed}"
        )

    def _finish_interrupted(self, node: Node) -> None:
        """Re-run a node a kill interrupted, once; a second interruption marks it failed."""
        if node.op == REFIT:  # the final stage reruns its refits from the start when it is reached again
            self._finish(node, Outcome("interrupted", failure="the run was killed during the final refit"))
            return
        code = self._code(node)
        if node.attempts >= 2 or not code.strip() or sha256_text(code) != node.code_sha256:
            why = (
                "twice"
                if node.attempts >= 2
                else "before its code was complete, or its solution.py changed since it was proposed"
            )
            self._finish(node, Outcome("interrupted", failure=f"the run was killed while this node ran, {why}"))
            return
        remaining = self.remaining_s()
        if remaining is not None and remaining < MIN_SCRIPT_S:
            self._finish(
                node, Outcome("interrupted", failure="the run was killed while this node ran, and no time is left")
            )
            return
        record_restarted(self.run.journal, node, self.elapsed())
        # The limit the uninterrupted run would have given it (only the time budget applies:
        # the node is already counted in the iteration budget).
        timeout = self._full_limit_s()
        timeout = timeout if remaining is None else min(timeout, remaining)
        seed = int(node.meta.get("seed", self.run.config.brain.seed))  # a re-run keeps its own seed
        outcome = self.runner.execute(node, timeout, seed=seed)
        self._mark_cut_short(node, outcome, timeout)
        self._finish(node, outcome)

    def _finish(self, node: Node, outcome: Outcome) -> None:
        started = time.monotonic()
        apply_outcome(node, outcome)  # the report compares the node with its parent and the best
        worker = threading.current_thread().name.removeprefix(
            "mlguild-"
        )  # "worker-2" (mlguild.workers), or "MainThread"
        report = self.pools.node_finished(node, self.state.graph, worker)  # what the other nodes read
        self.runner.write_report(node, outcome, self.state.graph, report.markdown() if report else [])
        outcome.timing["harness_s"] = round(outcome.timing.get("harness_s", 0.0) + time.monotonic() - started, 4)
        record_finished(self.run.journal, node, outcome, self.elapsed())
        if node.op == EDA and node.status == EXPLORED:
            stdout = read_text_no_follow(self.run.node_dir(node.id) / "stdout.txt")
            add_findings(self.run.path, node.id, stdout)
            self.contexts.brief = None  # the next proposal reads the brief with the findings
        if node.op not in (REFIT, RERUN, EDA):  # a re-run repeats its node: nothing new to remember
            self.memory.record(node, self.state.graph, "" if node.ok else self._code(node), self._columns)
            self._report_memory_warnings()
        is_best = self._sync_best()
        self.on_event("node_finished", {"node": node, "best": self.state.best_id, "is_best": is_best})

    def _report_memory_warnings(self) -> None:
        while self.memory.warnings:
            self.on_event("warning", {"message": self.memory.warnings.pop(0)})

    def _sync_best(self) -> bool:
        """Make best/ hold the graph's best node. Also repairs a kill between node_finished and
        best_changed: the journal says which node is best only once best/ really holds it."""
        best = self.state.graph.best()
        if best is None or best.id == self.state.best_id:
            return False
        self._promote(best)
        self.state.best_id = best.id
        self.run.journal.append(
            "best_changed", id=best.id, score=best.score, session_elapsed_s=round(self.elapsed(), 3)
        )
        return True

    def _promote(self, node: Node) -> None:
        """Copy the node's solution, submission and report into best/ (each file atomically)."""
        src, best = self.run.node_dir(node.id), self.run.best_dir
        for name, dest in (
            ("solution.py", "solution.py"),
            ("report.md", "report.md"),
            ("output/submission.csv", "submission.csv"),
            ("output/holdout.csv", "holdout.csv"),
        ):
            atomic_write(best / dest, read_no_follow(src / name))
        atomic_write(best / "plan.md", node.plan.strip() + "\n")
        atomic_write(
            best / "best.json",
            json.dumps(
                {"node": node.id, "holdout_score": node.score, "metric": self.scorers.holdout.metric.name}, indent=2
            ),
        )


def _fix_for(cause: Diagnosis, run: RunDir, see: str) -> str:
    """What a user can do when every node fails the same way: fix the data the failure names,
    or look at the failing node."""
    if cause.column is not None:
        return (
            f"{see}; the column {cause.column!r} cannot be used as it is: fix or remove it in the task's "
            f"train and test files, then start a new run with `mlguild run`"
        )
    if cause.step:
        return f"{see}; the script fails in its {cause.step!r} step every time: check the data that step reads"
    return f"{see}; every script fails this way, so check the task's data and this machine's Python packages"
