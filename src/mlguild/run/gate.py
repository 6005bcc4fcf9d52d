"""The gates a proposal passes before its script starts, on what it will cost
(mlguild.run.cost estimates it):

- a proposal whose estimate, with ``ESTIMATE_MARGIN`` to spare, exceeds the time limit it would
  have is not started (``unaffordable``; a first draft that runs a pretrained encoder is estimated from the
  encoder's throughput measured on a sample, mlguild.run.encoder_probe): its node is
  recorded with the status ``over_budget``, the estimate and its basis in its failure and
  timing (``estimate_s``), so the brain sees it and moves on;
  while a started script runs, its estimate (not its whole limit) is what the final stage's
  reserve expects of it (``BudgetClock.in_flight``);
- a seed check (mlguild.search.evidence: re-runs of a near-tie candidate with other seeds)
  is run only where its decision can still be acted on: its re-runs cost at most
  ``search.evidence_share`` of the search's time (or iterations) left; otherwise it is waived
  (``seed_check_waived`` in the journal) and the candidate stays behind the best, as a near
  tie without evidence does (``waive_seed_checks``).
"""

from __future__ import annotations

from ..core.graph import Node
from ..core.protocols import Action, Proposal
from ..core.vocabulary import FailureKind, Op
from ..rundir.records import Outcome, record_seed_check_waived
from .cost import ESTIMATE_MARGIN, Estimate, estimate, least_seconds
from .session import Session


def unaffordable(session: Session, node: Node, action: Action, proposal: Proposal, timeout: float) -> Outcome | None:
    """The outcome of ``node`` when its proposal cannot finish in ``timeout`` (the time limit
    it would have), or None to start it. The estimate is what the budget expects it to take
    while it runs (``BudgetClock.in_flight``). A draft that runs a pretrained encoder nothing
    on this run has measured is estimated from the encoder's measured throughput
    (mlguild.run.encoder_probe), whose seconds come out of ``timeout``; any other script nothing
    has measured the like of (a draft of a new family, an improve of a parent cut short), but a
    blend, at what every script costs besides fitting (``least_seconds``); a blend at this run's
    fastest blend (``fastest_blend``), and started when none has run."""
    if not proposal.code.strip() or action.op == Op.RERUN:
        # A seed check's re-run is gated before it is chosen (waive_seed_checks): one recorded
        # as not started would count as the candidate failing with another seed.
        return None
    with session.lock:
        code_of = session.code
        found = estimate(session.state.graph, action, proposal, code_of, session.run.profile.n_train)
    if found is None and action.op in (Op.DRAFT, Op.EVOLVE):  # outside the lock: a probe takes seconds
        started = session.clock.elapsed()
        found = session.probe.estimate(proposal.meta, proposal.code, timeout)
        timeout -= session.clock.elapsed() - started
    if found is None and action.op != Op.BLEND:  # a blend reads stored predictions: less than a script reads
        # A lower bound (a draft of a family nothing measured, an improve of a parent whose run
        # was cut short): it decides whether to start, but the budget keeps expecting the
        # script's whole limit while it runs.
        with session.lock:
            least = least_seconds(session.state.graph)
        if least is None or least.seconds * ESTIMATE_MARGIN <= timeout:
            return None
        return _not_started(session, node, action, least, timeout)
    if found is None:
        return None
    with session.lock:
        if node.id in session.clock.in_flight:
            session.clock.in_flight[node.id] = min(timeout, found.seconds)
    fits = found.seconds * ESTIMATE_MARGIN <= timeout  # with a margin for the noise of a script's seconds
    return None if fits else _not_started(session, node, action, found, timeout)


def _not_started(session: Session, node: Node, action: Action, found: Estimate, timeout: float) -> Outcome:
    """The outcome of ``node``, not started: its estimate ``found`` exceeds its ``timeout``."""
    why = (
        f"not started: its estimated cost, about {found.seconds:.0f} s ({found.basis}), "
        f"exceeds the {timeout:.0f} s it could have"
    )
    session.on_event("warning", {"message": f"{node.id} ({action.op}) {why}"})
    return Outcome(
        FailureKind.OVER_BUDGET, failure=why, timing={"exec_s": 0.0, "harness_s": 0.0, "estimate_s": found.seconds}
    )


def waive_seed_checks(session: Session) -> None:
    """Waive the seed check of the candidate waiting for one (``SearchGraph.pending_evidence``)
    when its re-runs cost more than ``search.evidence_share`` of the search's time left (the
    time left less the final stage's reserve; without a time budget, its iterations left).
    Called before the policy chooses, with the lock held."""
    graph, config = session.state.graph, session.run.config
    evidence = graph.evidence
    candidate = graph.pending_evidence() if evidence is not None else None
    if evidence is None or candidate is None or candidate.id in graph.waived:
        return
    remaining = session.clock.remaining_s()
    search_left_s = None if remaining is None else max(0.0, remaining - session.clock.reserve(graph).total_s)
    needed = evidence.reruns - len(graph.rerun_groups().get(candidate.id, []))
    share = config.search.evidence_share
    iterations = config.budget.iterations
    if search_left_s is not None:
        cost = needed * (candidate.timing.get("exec_s") or 0.0)
        if cost <= share * search_left_s:
            return
        why = f"its {needed} re-runs would take about {cost:.0f} s of the search's {search_left_s:.0f} s left"
    elif iterations is not None:
        left = iterations - sum(1 for n in graph if n.op not in (Op.REFIT, Op.EDA))
        if needed <= share * left:
            return
        why = f"its {needed} re-runs would take {needed} of the search's {left} nodes left"
    else:
        return
    graph.waived.add(candidate.id)
    best = graph.best()
    record_seed_check_waived(
        session.run.journal, candidate.id, best.id if best else None, f"{why} (more than {share:.0%})",
        session.clock.elapsed(),
    )  # fmt: skip
    session.on_event("warning", {"message": f"no seed check of {candidate.id}: {why}; it stays behind the best"})
