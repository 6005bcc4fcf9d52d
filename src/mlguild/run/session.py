"""One session of a run: the composition root every part of a run is handed.

A session is opened from a run folder, a brain, a policy and a sandbox. It holds what the
loop, the workers, the fix loop and the final stage share: the journal (through the run
folder), the state replayed from it, the executor and the sealed scorers, the memory store
and the run's pools, the contexts brains see, and the budget clock. The parts take a
session, or plain callables, never another part's private attributes.

Several workers' threads share a session: every change to the graph, the journal's order,
the memory, the pools and best/ holds ``lock``; a brain that is not declared concurrent
(``mlguild.core.protocols.Concurrent``) is asked by one worker at a time (``brain_lock``).
What a node does to the graph before it is run (``reserve``, ``claim``, ``release``,
``skip``) is the session's, each taking the lock itself, so that the loop holds none.
``open_session`` opens one as a real run does (``mlguild.launch.entry.drive``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from ..config import mlguild_home
from ..core.errors import MoveUnavailable
from ..core.graph import Evidence, Node
from ..core.protocols import Action, Brain, Cancellable, Concurrent, Context, Policy, Proposal, Sandbox
from ..core.vocabulary import FailureKind
from ..memory import Memory, TaskTraits
from ..metrics import get_metric
from ..pools import Pools, community_code
from ..rundir import events, results
from ..rundir.folder import RunDir, scorers_for
from ..rundir.replay import RunState, replay
from ..sandbox import get_sandbox
from ..sandbox.runner import stop_running_scripts
from ..scoring.integrity import fingerprint
from ..search import get_policy
from ..util.fs import read_text_no_follow, sha256_text
from .budget import BudgetClock
from .context import ContextBuilder
from .encoder_probe import EncoderProbe
from .executor import Executor
from .reserve import RefitScales, refit_family
from .samples import RowPlan

EventHandler = Callable[[str, dict], None]


@dataclass
class Reserved:
    """A node in the graph as pending, chosen with ``action``, its script's time limit, and
    what its brain will see (None for a re-run: no brain involved)."""

    node: Node
    action: Action
    timeout: float
    context: Context | None


# What a reserved node's brain will see, built under the lock (mlguild.run.propose.context_for).
ContextFor = Callable[["Session", Node, Action, float], "Context | None"]


class Session:
    """What one session of a run holds (see the module docstring)."""

    def __init__(
        self, run: RunDir, brain: Brain, policy: Policy, sandbox: Sandbox, on_event: EventHandler | None = None
    ):
        self.run, self.brain, self.policy = run, brain, policy
        self.state: RunState = replay(run.journal.records, get_metric(run.spec.metric).direction)
        search = run.config.search
        if search.evidence_reruns:  # the best node is promoted by evidence (mlguild.search.evidence)
            self.state.graph.evidence = Evidence(search.evidence_reruns, search.evidence_z, search.assumed_noise)
        self.scorers = scorers_for(run, self.state.scorer_fingerprint or fingerprint())
        self.executor = Executor(run, sandbox, self.scorers)
        self.clock = BudgetClock(run, self.state)
        self.probe = EncoderProbe(run)  # an encoder's throughput, before the first draft that runs it
        self.rows = RowPlan.of(run)  # which row sample each node trains on (a large table's)
        self.on_event: EventHandler = on_event or (lambda kind, data: None)
        self.lock = threading.RLock()
        self.brain_lock: AbstractContextManager = nullcontext() if isinstance(brain, Concurrent) else threading.Lock()
        self.interrupted = threading.Event()  # the user stopped the run: workers leave their nodes unfinished
        self.workers = 1  # the loop's (run_loop): several workers never run one script twice (claim)
        self.columns = tuple(c.name for c in run.profile.columns)
        traits = TaskTraits.of(run.spec.public_dict(), run.profile.to_dict())
        self.memory = Memory.open(
            run.path.name, run.task_key, traits, run.config.memory, mlguild_home(), name=run.spec.name
        )
        self.memory.replay(self.state.graph, self.code, self.columns)
        # The final stage's reserve starts from what other runs' refits of each family measured.
        same, others = self.memory.refit_scales(run.profile.n_train)
        self.clock.scales = RefitScales(same, others, lambda node: refit_family(node, self.code(node)))
        self.pools = Pools.open(run.path, community_code(run))
        self.pools.sync(self.state.graph)  # a resume: the nodes a kill left unreported
        results.rebuild(run.path, [n for n in self.state.graph if n.finished], run.journal.records)
        holdout = self.scorers.holdout
        self.contexts = ContextBuilder(
            run, self.memory, holdout.metric.direction, self.pools,
            spread=lambda node_id: holdout.spread(run.node_dir(node_id) / "output" / "holdout.csv"),
            columns=lambda node_id: holdout.column_scores(run.node_dir(node_id) / "output" / "holdout.csv"),
        )  # fmt: skip

    def reserve(self, choose: Callable[[], tuple[Action, float]], context: ContextFor) -> Reserved:
        """The node ``choose`` picks (its action and its script's time limit), in the graph at
        once as pending, and what its brain will see (``context``). One hold of the lock for
        all of it: another worker choosing next sees this node in flight, and its ideas taken."""
        with self.lock:
            action, timeout = choose()
            graph = self.state.graph
            node = Node(id=graph.next_id(), op=action.op, parents=action.parents, iteration=len(graph))
            seen = context(self, node, action, timeout)
            graph.add(node)
            self.clock.in_flight[node.id] = timeout  # its refit is kept back while it runs
            self.on_event("node_proposing", {"id": node.id, "op": action.op, "reason": action.reason})
        return Reserved(node, action, timeout, seen)

    def claim(self, node: Node, proposal: Proposal) -> str | None:
        """With several workers: the node whose script is ``proposal``'s code (finished or in
        flight), or None, and then the code is ``node``'s at once: a second worker proposing
        it meanwhile finds this node. Two workers choosing alike from the same graph must not
        buy the same node twice."""
        if self.workers <= 1 or not proposal.code.strip():
            # One worker keeps its old behaviour: its repeats are a brain's own choice, made
            # knowing the graph (and what tests replay); no code: the outcome is a failure.
            return None
        code_sha256 = sha256_text(proposal.code)
        with self.lock:
            twin = next(
                (
                    n.id
                    for n in self.state.graph
                    # a recorded duplicate carries its twin's hash: name the node that ran
                    if n.id != node.id and n.code_sha256 == code_sha256 and n.status != FailureKind.DUPLICATE
                ),
                None,
            )
            if twin is None:
                node.code_sha256, node.plan, node.meta = code_sha256, proposal.plan, proposal.meta
        return twin

    def release(self, node: Node, *, withdraw: bool = False) -> None:
        """``node`` is no longer in flight; ``withdraw``: it never started, and leaves the graph
        as if never chosen."""
        with self.lock:
            self.clock.in_flight.pop(node.id, None)
            if withdraw:
                self.state.graph.nodes.pop(node.id, None)

    def skip(self, node: Node, action: Action, exc: MoveUnavailable) -> None:
        """Take the reserved ``node`` out (it never started) and record that ``action``'s op
        cannot be made for this task, so that it is not chosen again."""
        with self.lock:
            self.release(node, withdraw=True)
            self.state.unavailable.setdefault(action.op, exc.message)
            events.move_skipped(
                self.run.journal, action.op, list(action.parents), exc.message, exc.fix, self.clock.elapsed()
            )
            fix = f" ({exc.fix})" if exc.fix else ""
            self.on_event(
                "warning", {"message": f"no {action.op} for this task, the search goes on without: {exc.message}{fix}"}
            )

    def code(self, node: Node) -> str:
        """The node's script as it is on disk (read without following links)."""
        return read_text_no_follow(self.run.node_dir(node.id) / "solution.py")

    def report_warnings(self) -> None:
        """Pass the memory's warnings on to the event handler, once each."""
        while self.memory.warnings:
            self.on_event("warning", {"message": self.memory.warnings.pop(0)})

    def interrupt(self) -> None:
        """The user stopped the run (Ctrl-C): stop every script running, here or on Ray;
        the nodes they belonged to are left unfinished, for a resume."""
        self.interrupted.set()
        stop_running_scripts()
        if isinstance(self.executor.sandbox, Cancellable):
            self.executor.sandbox.cancel_all()

    def close(self) -> None:
        """Close what the session opened (the run folder is its opener's to close)."""
        self.pools.close()


def open_session(
    run: RunDir,
    brain: Brain,
    sandbox: Sandbox | None = None,
    *,
    policy: Policy | None = None,
    on_event: EventHandler | None = None,
) -> Session:
    """A session of the open ``run`` as a real run opens it (``mlguild.launch.entry.drive``):
    the policy its configuration names, given the run's budget (how fast mcgs moves from
    exploring to exploiting) unless ``policy`` is given, and the configured sandbox unless
    ``sandbox`` is."""
    cfg = run.config
    policy = policy if policy is not None else get_policy(cfg.search, cfg.budget)
    return Session(run, brain, policy, sandbox if sandbox is not None else get_sandbox(cfg.sandbox.kind), on_event)
