"""What a node's proposal needs: the context its brain sees and the ideas it is offered, the
brain's request and its review, a re-run's script, and a duplicate sent back.

The loop reserves a node (``mlguild.run.session.Session.reserve``, which builds its context
with ``context_for``) and asks ``propose`` for what to run. The ideas offered a node are
recorded on it when its context is built (``offer``: the other workers' idea selection reads
them while it is in flight) and carried from there into its proposal's meta (``offered``),
which is what the journal keeps.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.errors import MoveUnavailable, ProposalFailed, StopRun
from ..core.graph import Node
from ..core.protocols import Action, Context, Explorer, Proposal, Reviewer
from ..core.vocabulary import FailureKind, Op
from ..rundir.records import Outcome
from .context import offer
from .references import References
from .samples import grow_proposal
from .session import Reserved, Session

# How often the brain is asked again for a node whose proposal repeats a node's code; then
# the node is recorded as a duplicate, its script not run (a deterministic brain given the
# same graph can only repeat itself).
DUPLICATE_RETRIES = 2


def context_for(s: Session, node: Node, action: Action, timeout: float) -> Context | None:
    """What ``node``'s brain will see (None for a re-run: no brain involved), the ideas it
    offers recorded on the node at once. Holds the session's lock (reentrant: ``reserve``
    calls it holding it)."""
    if action.op in (Op.RERUN, Op.GROW):
        return None
    with s.lock:
        context = s.contexts.build(s.state.graph, action, node.iteration, timeout, node.id)
        offer(node, context)  # seen by the other workers' idea selection while this node is in flight
    return context


def propose(s: Session, reserved: Reserved, references: References) -> tuple[Proposal, Outcome | None, int]:
    """(the proposal, the outcome when the proposal itself failed, the script's seed). A
    StopRun takes the reserved node out of the graph and is raised, as is a move the task
    does not allow (``MoveUnavailable``: the loop skips it); any other failure of the brain
    becomes the node's outcome, named for the next prompt. With several workers, a proposal
    repeating a node's code is sent back (``Session.claim``)."""
    node, action = reserved.node, reserved.action
    seed = s.run.config.brain.seed
    failure: Outcome | None = None
    try:
        if action.op == Op.RERUN:  # the same script with another seed: no brain involved
            proposal, seed = _rerun(s, action.parents[0], seed)
        elif action.op == Op.GROW:  # a node's script on more rows: no brain involved either
            with s.lock:
                parent = s.state.graph[action.parents[0]]
                proposal = grow_proposal(parent, s.code(parent), action)
            seed = int(parent.meta.get("seed", seed))
        elif action.reference:  # the harness's script, not the brain's: nothing to review
            proposal = references.proposal(action)
        else:
            proposal, failure = _from_brain(s, reserved)
    except (StopRun, MoveUnavailable):  # a spent budget or an unusable setup stops the run, said
        # clearly; a move the task does not allow is skipped by the loop
        s.release(node, withdraw=True)  # never started: as if never chosen
        raise
    except ProposalFailed as exc:  # an LLM request or a reply failed: named for the next prompt
        failed_as, why, partial = exc.as_record()
        proposal, failure = Proposal(plan=f"({failed_as}: {why})", code=partial), Outcome(failed_as, failure=why)
    except Exception as exc:  # a brain bug must not end the run
        proposal = Proposal(f"(the brain failed: {exc})", "")
        failure = Outcome(FailureKind.BRAIN_ERROR, failure=f"{type(exc).__name__}: {exc}")
    if failure is not None:
        failure.timing = {"exec_s": 0.0, "harness_s": 0.0}
    return offered(node, proposal), failure, seed


def offered(node: Node, proposal: Proposal) -> Proposal:
    """``proposal`` with the ideas offered ``node`` in its meta (``ideas_offered``, journaled
    with the node): every proposal made for it, a failed one's and an exploration's included."""
    if "ideas_offered" not in node.meta or proposal.meta.get("ideas_offered") == node.meta["ideas_offered"]:
        return proposal
    return replace(proposal, meta={**proposal.meta, "ideas_offered": node.meta["ideas_offered"]})


def _from_brain(s: Session, reserved: Reserved) -> tuple[Proposal, Outcome | None]:
    """The brain's reviewed proposal, or (with several workers) a duplicate's outcome when it
    repeated a node's code each time it was asked, seeing the twin in its history."""
    node, action, context = reserved.node, reserved.action, reserved.context
    assert context is not None
    proposal = _ask(s, node, action, context)
    twin = s.claim(node, proposal)
    for _ in range(DUPLICATE_RETRIES):  # asked again, now seeing the twin in its history
        if twin is None:
            break
        context = context_for(s, node, action, reserved.timeout)
        assert context is not None
        proposal = _ask(s, node, action, context)
        twin = s.claim(node, proposal)
    if twin is None:
        return _reviewed(s, action, context, proposal), None
    why = f"its code is {twin}'s, already run or running: not run again"
    return proposal, Outcome(FailureKind.DUPLICATE, failure=why)


def _ask(s: Session, node: Node, action: Action, context: Context) -> Proposal:
    """The brain's proposal for ``action`` (its exploration, for an exploratory node), with
    the ideas offered ``node`` (``claim`` makes its meta the node's while it is in flight)."""
    with s.brain_lock:
        if action.op == Op.EDA and isinstance(s.brain, Explorer):
            proposal = s.brain.explore(context)
        else:
            proposal = s.brain.propose(action, context)
    return offered(node, proposal)


def _reviewed(s: Session, action: Action, context: Context, proposal: Proposal) -> Proposal:
    """The proposal to run: a ``Reviewer`` brain's LLM reads it first (and sends it back
    once for a serious finding; mlguild.brains.llm.review)."""
    if not isinstance(s.brain, Reviewer):
        return proposal
    with s.brain_lock:
        return s.brain.review(action, context, proposal)


def _rerun(s: Session, candidate: str, seed: int) -> tuple[Proposal, int]:
    """The script of ``candidate``, unchanged, with the next seed of its re-runs."""
    with s.lock:
        seed += 1 + len(s.state.graph.rerun_groups().get(candidate, []))
        code = s.code(s.state.graph[candidate])
    plan = (
        f"## Re-run of {candidate} with seed {seed}\n\nThe script of `{candidate}`, unchanged: it beats the "
        "best node by less than the noise margin, so it is promoted only if its mean over seeds is better.\n"
    )
    title = f"Re-run of {candidate}, seed {seed}"
    return Proposal(plan, code, {"rerun_of": candidate, "seed": seed}, title=title), seed
