"""The run's budget clock, and why a session stopped: how long this session has run, how much of the run's budget is
left, and the time limit the next script may have.

A run's time budget spans every session (the journal keeps what earlier ones spent); its
iteration budget counts search nodes only (refits are the final stage, an exploration the
preparation). Near the end a script gets only the time left, less the final stage's reserve
(mlguild.run.reserve: the refit, the audit and the grade, as this run measured them), and no
more than leaves time to refit the script itself should it become the best, so a run that
ends its budget can still be refitted, and ends close to its budget. The search ends only
when not even its fastest measured script fits in that time: a limit under ``MIN_SCRIPT_S``
is the last slot, and goes to an improve of the best node whose script fits (``affordable``),
not to nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..config import Config
from ..core.errors import BudgetExhausted
from ..core.graph import Node, SearchGraph
from ..core.protocols import Action
from ..core.vocabulary import FailureKind, Op
from ..rundir.folder import RunDir
from ..rundir.records import Outcome
from ..rundir.replay import RunState
from .cost import ESTIMATE_MARGIN, nothing_fits
from .refit import own_refit_limit
from .reserve import RefitScales, Reserve, final_reserve

MIN_SCRIPT_S = 5.0  # below this much time left, a script (a node, a fix step) cannot do useful work


class BudgetClock:
    """The session's clock against the run's budget (``budget.time_s``, ``budget.iterations``)."""

    def __init__(self, run: RunDir, state: RunState):
        self.run, self.state = run, state
        self._session_start = time.monotonic()
        # The seconds the scripts running now are expected to take (their limits, or their
        # estimated cost once it is known: mlguild.run.cost): each may become the best, and its
        # refit is kept back too. Changed under the session's lock, as the graph is.
        self.in_flight: dict[str, float] = {}
        # What refits of each model family measured (this run's, the memory's): the session
        # sets the memory's once it is open (mlguild.run.session).
        self.scales = RefitScales()

    @property
    def config(self) -> Config:
        return self.run.config  # a resume may replace the run's config before the loop starts

    def elapsed(self) -> float:
        """Seconds since this session started (the journal's session clock)."""
        return time.monotonic() - self._session_start

    def remaining_s(self) -> float | None:
        """Seconds of the run's time budget left, or None without a time budget."""
        budget = self.config.budget.time_s
        return None if budget is None else budget - self.state.spent_s - self.elapsed()

    def full_limit_s(self) -> float:
        """The time limit a script gets while the run's end is not near."""
        return full_limit_s(self.config)

    def next_limit_s(self, graph: SearchGraph, planned_blend: tuple[str, ...] = ()) -> float:
        """Raise BudgetExhausted, or return the time limit the next script may have. With
        ``planned_blend`` (the members of a blend about to be made), the time its refit would
        need is kept back too: a blend made in the last minutes must still be refitted."""
        budget = self.config.budget
        searched = sum(1 for n in graph if n.op not in (Op.REFIT, Op.EDA))
        if budget.iterations is not None and searched >= budget.iterations:
            raise BudgetExhausted("iterations")
        timeout = self.full_limit_s()
        remaining = self.remaining_s()
        if remaining is not None and budget.time_s is not None:  # both or neither (remaining_s)
            reserve = self.reserve(graph, planned_blend)
            limit = remaining - reserve.total_s
            if graph.best() is not None:  # before the first scored node, a submission matters more than its refit
                planned = planned_blend if reserve.planned else ()  # a blend not waited for: its members neither
                scale_of = self.scales.of(self.run, graph)
                limit = min(limit, own_refit_limit(self.run, graph, remaining - reserve.audit_s, planned, scale_of))
            if limit < MIN_SCRIPT_S and best_that_fits(graph, limit) is None:
                raise BudgetExhausted("time")
            nothing_fits(graph, limit, timeout)  # the brain's proposals cannot finish in the time left
            timeout = min(timeout, limit)
        return timeout

    def reserve(self, graph: SearchGraph, planned_blend: tuple[str, ...] = ()) -> Reserve:
        """What the search keeps back now for the final stage (mlguild.run.reserve)."""
        return final_reserve(self.run, graph, planned_blend, self.in_flight.values(), self.scales)

    def within_remaining(self, timeout: float, brain_s: float = 0.0) -> float:
        """``timeout`` cut to the time left (at least a second): the brain's own time comes
        out of the script's. A limit the run's end shortened loses ``brain_s`` (the time
        the brain took since the limit was set) too, or the brain would eat the refit's time."""
        remaining = self.remaining_s()
        if remaining is None:
            return timeout
        if timeout < self.full_limit_s():
            timeout -= brain_s
        return max(1.0, min(timeout, remaining))


def full_limit_s(config: Config) -> float:
    """The time limit a script gets while the run's end is not near (``config`` alone)."""
    budget = config.budget
    limit = config.sandbox.script_timeout_s
    if budget.time_s is not None:
        limit = min(limit, max(MIN_SCRIPT_S, budget.script_share * budget.time_s))
    return limit


# Moves whose script is, or starts from, their parents' scripts: each needs the time they took.
_BUILDS_ON = (Op.IMPROVE, Op.EVOLVE, Op.RERUN, Op.FUSE, Op.DEBUG)


def affordable(action: Action, graph: SearchGraph, timeout: float, full_limit: float) -> Action:
    """``action``, or when the run's end has cut ``timeout`` below ``full_limit`` (the limit
    scripts had until then) and it cannot run its parents' scripts (they took longer than
    that), a cheaper move: an improve of the best scored node whose script fits (``best_that_fits``). With none
    that fits, BudgetExhausted("time"): the run ends rather than ask for a script that the
    time left is sure to kill (an 80 s pipeline improved with 6 s left). In the last slot
    (under ``MIN_SCRIPT_S``) a move whose cost nothing measured (a draft) is replaced too.
    Under the full limit every move stands: a repair of a script that timed out is how it
    learns to be faster."""
    if timeout >= full_limit:
        return action
    if action.op in _BUILDS_ON and action.parents:
        need = max(graph[p].timing.get("exec_s") or 0.0 for p in action.parents)
        if need <= timeout:
            return action
        why = f"less than the {need:.0f} s {action.op} {', '.join(action.parents)} needs"
    elif timeout < MIN_SCRIPT_S and action.op not in (Op.BLEND, Op.REFIT):
        why = f"too little for a {action.op} whose cost nothing on this run measured"
    else:
        return action
    return cheaper(graph, timeout, why)


def best_that_fits(graph: SearchGraph, timeout: float) -> Node | None:
    """The best-ranked scored node (not a blend) whose script ran within ``timeout`` with the
    estimate margin to spare (else within it at all): what a move the time left cannot make
    gives way to. The best that fits, not the fastest: a 30-minute ames run spent its last
    four minutes on 27 improves of its 2-s linear model (0.120 against the best's 0.108), whose
    moves were used up, while a 4-s XGBoost within 0.006 of the best could have been tuned."""
    fitting = [
        n
        for n in graph.ranked()
        if not n.is_blend
        and n.op not in (Op.REFIT, Op.RERUN, Op.EDA)
        and n.timing.get("exec_s") is not None
        and n.timing["exec_s"] <= timeout
    ]
    spare = [n for n in fitting if n.timing["exec_s"] * ESTIMATE_MARGIN <= timeout]
    chosen = spare or fitting
    return chosen[0] if chosen else None


def cheaper(graph: SearchGraph, timeout: float, why: str) -> Action:
    """An improve of the node ``best_that_fits`` ``timeout``, the move ``why`` says could not
    be made; BudgetExhausted("time") when none fits."""
    node = best_that_fits(graph, timeout)
    if node is None:
        raise BudgetExhausted("time")
    return Action(
        Op.IMPROVE,
        (node.id,),
        f"only {timeout:.0f} s left, {why}: improve {node.id} instead, the best node whose script fits "
        f"(it ran {node.timing['exec_s']:.0f} s)",
    )


@dataclass(frozen=True)
class Stop:
    """Why the loop stopped: a budget ended (``which``: time, iterations, llm_tokens,
    llm_cost, converged), or the user interrupted it. Only a run that ended by its budget is
    finished: one that was interrupted can still be resumed, and find a better node."""

    kind: str  # "budget" | "interrupted"
    which: str = ""

    @property
    def finished(self) -> bool:
        return self.kind == "budget"

    def __str__(self) -> str:
        return f"budget: {self.which}" if self.finished else "interrupted by user"


INTERRUPTED = Stop("interrupted")


def mark_cut_short(clock: BudgetClock, node: Node, outcome: Outcome, timeout: float) -> None:
    """A script that timed out under a limit the run's end had shortened says nothing
    about its change: the timing says so, and neither this run's move estimates nor the
    memory count it as the change failing."""
    if outcome.status == FailureKind.TIMEOUT and node.op != Op.EDA and timeout < clock.full_limit_s():
        outcome.timing["cut_short"] = True


def spent_budget(config: Config, state: RunState) -> str | None:
    """What of a finished run's budget is spent, when a new session would stop before its
    first node (the last session ended by its budget and ``config`` gives no more); None when
    a session can still run. Resuming such a run would only replay its banner."""
    reason = state.finished_reason or ""
    if not reason.startswith("budget: "):
        return None  # interrupted, killed or still running: there is work left
    budget = config.budget
    searched = sum(1 for n in state.graph if n.op not in (Op.REFIT, Op.EDA))
    spent = []
    if budget.iterations is not None and searched >= budget.iterations:
        spent.append(f"{searched} of {budget.iterations} nodes")
    if budget.time_s is not None and budget.time_s - state.spent_s < MIN_SCRIPT_S:
        spent.append(f"{state.spent_s:.0f} s of {budget.time_s:g} s")
    return "; ".join(spent) or None
