"""One session of a run: the composition root every part of a run is handed.

A session is opened from a run folder, a brain, a policy and a sandbox. It holds what the
loop, the workers, the fix loop and the final stage share: the journal (through the run
folder), the state replayed from it, the executor and the sealed scorers, the memory store
and the run's pools, the contexts brains see, and the budget clock. The parts take a
session, or plain callables, never another part's private attributes.

Several workers' threads share a session: every change to the graph, the journal's order,
the memory, the pools and best/ holds ``lock``; a brain that is not declared concurrent
(``mlguild.core.protocols.Concurrent``) is asked by one worker at a time (``brain_lock``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from ..config import mlguild_home
from ..core.graph import Evidence, Node
from ..core.protocols import Brain, Cancellable, Concurrent, Policy, Sandbox
from ..memory import Memory, TaskTraits
from ..metrics import get_metric
from ..pools import Pools, community_code
from ..rundir import results
from ..rundir.folder import RunDir, scorers_for
from ..rundir.replay import RunState, replay
from ..sandbox.runner import stop_running_scripts
from ..scoring.scorer import fingerprint
from ..util.fs import read_text_no_follow
from .budget import BudgetClock
from .context import ContextBuilder
from .executor import Executor

EventHandler = Callable[[str, dict], None]


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
        self.on_event: EventHandler = on_event or (lambda kind, data: None)
        self.lock = threading.RLock()
        self.brain_lock: AbstractContextManager = nullcontext() if isinstance(brain, Concurrent) else threading.Lock()
        self.interrupted = threading.Event()  # the user stopped the run: workers leave their nodes unfinished
        self.columns = tuple(c.name for c in run.profile.columns)
        traits = TaskTraits.of(run.spec.public_dict(), run.profile.to_dict())
        self.memory = Memory.open(
            run.path.name, run.task_key, traits, run.config.memory, mlguild_home(), name=run.spec.name
        )
        self.memory.replay(self.state.graph, self.code, self.columns)
        self.pools = Pools.open(run.path, community_code(run))
        self.pools.sync(self.state.graph)  # a resume: the nodes a kill left unreported
        results.rebuild(run.path, [n for n in self.state.graph if n.finished], run.journal.records)
        holdout = self.scorers.holdout
        self.contexts = ContextBuilder(
            run, self.memory, holdout.metric.direction, self.pools,
            spread=lambda node_id: holdout.spread(run.node_dir(node_id) / "output" / "holdout.csv"),
            columns=lambda node_id: holdout.column_scores(run.node_dir(node_id) / "output" / "holdout.csv"),
        )  # fmt: skip

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
