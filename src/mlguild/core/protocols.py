"""The core concepts as small Protocols, and the value types that flow between them.

The agent and the brains are annotated with these: ``Brain``, ``Policy``, ``Sandbox``,
``Scorer`` and ``LLM``. Implementations are small classes picked by name from tables
(``brains.get_brain``, ``sandbox.get_sandbox``, ``search.get_policy``, ``llm.make_llm``);
nothing here imports a heavy library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .meta import NodeMeta
from .vocabulary import Op

if TYPE_CHECKING:
    import pandas as pd

    from .execution import ExecResult, Limits
    from .graph import SearchGraph
    from .recall import EarlierBest, MovePrior, Recall
    from .score import Score

# A proposal whose meta has this key set is its brain's safest pipeline: the loop stops a
# run whose nodes all fail the same way only once such a proposal has failed that way too.
LAST_RESORT = "last_resort"


@dataclass(frozen=True)
class Action:
    """What the policy decided to do next: an operation on zero or more parent nodes."""

    op: Op
    parents: tuple[str, ...] = ()
    reason: str = ""
    reference: str = ""  # a rung of the baseline ladder the harness runs itself (mlguild.run.references)
    rows: int | None = None  # the training rows its script reads: a random sample of this many (None: all)


@dataclass(frozen=True)
class ParentView:
    """What a brain may know about a parent node: its plan, code, outcome and recipe meta."""

    node_id: str
    op: str
    plan: str
    code: str
    status: str  # "scored" or a failure kind name
    score: float | None
    failure: str | None = None  # failure message for debug prompts
    meta: NodeMeta = field(default_factory=NodeMeta)
    stdout_tail: str = ""
    stderr_tail: str = ""
    exec_s: float | None = None  # how long its script ran
    budget_s: float | None = None  # the time limit it ran under
    tried: tuple[str, ...] = ()  # one line per node already built on it, oldest first, with its result
    warnings: tuple[str, ...] = ()  # what its leak-check flags mean (mlguild.scoring.flags), with its scores
    oof_score: float | None = None  # its out-of-fold predictions scored by the harness on the training labels
    title: str = ""  # its one-line title (mlguild.core.titles)
    column_scores: dict[str, float] | None = None  # several targets: its holdout score on each column
    branch_last_failed: bool = False  # the latest finished node of its branch failed (it, or one built on it)
    evidence: tuple[str, ...] = ()  # what the harness measured of it beyond its score (mlguild.run.evidence)


@dataclass(frozen=True)
class HistoryItem:
    """One earlier node, summarised: enough to avoid repeating work, small enough to stay bounded."""

    node_id: str
    op: str
    status: str
    score: float | None
    meta: NodeMeta
    exec_s: float | None = None  # how long its script ran (None: it never ran)
    failure: str | None = None  # the end of its failure message, when it failed
    cut_short: bool = False  # it timed out under a limit the run's end had shortened
    title: str = ""  # its one-line title (mlguild.core.titles)
    pooled: bool = False  # ``score`` is the pooled score of a small holdout (holdout and out-of-fold rows)


@dataclass(frozen=True)
class Repair:
    """A recipe script that failed and the script (written by another brain) that repaired it."""

    node_id: str  # the repairing node
    recipe: str
    failed_code: str
    fixed_code: str


class MemoryQuery(Protocol):
    """The memory a brain may ask while it proposes (mlguild.run.context.PlanRecall): the
    records most like ``query`` (a draft plan), bounded as a prompt shows them, leaving out
    the nodes the context shows already. What it answered is kept for the node's journal."""

    def recall(self, query: str) -> Recall: ...


@dataclass(frozen=True)
class Context:
    """Everything a brain sees for one proposal. Context is isolated on purpose: the task, the
    data profile and the parents — plus a bounded summary of history — never every node's code."""

    task: dict[str, Any]  # TaskSpec.public_dict()
    description: str
    profile: dict[str, Any]  # mlguild.task.profile.DataProfile.to_dict()
    parents: tuple[ParentView, ...]
    history: tuple[HistoryItem, ...]
    direction: str  # "maximize" | "minimize"
    script_timeout_s: float
    seed: int
    iteration: int
    stagnation: int = 0  # attempts in the parent's branch since it last improved
    leaders: tuple[str, ...] = ()  # the best node of each of the best branches, one line each
    trajectory: tuple[str, ...] = ()  # for an evolve: the parent's branch, oldest first, one line per node
    repairs: tuple[Repair, ...] = ()  # for a draft: recipe scripts another brain repaired on this task
    recall: Recall | None = None  # the most similar experience records (mlguild.memory), as lines
    move_priors: dict[str, MovePrior] = field(default_factory=dict)  # recipe moves on similar tasks
    family_priors: dict[str, MovePrior] = field(default_factory=dict)  # recipe families on similar tasks
    # Per recipe family, the parameters of its best nodes in other runs on similar tasks, each
    # with the run's similarity weight (mlguild.memory.priors.family_configs): where tuning starts.
    family_configs: dict[str, tuple[tuple[float, dict[str, Any]], ...]] = field(default_factory=dict)
    brief: str = ""  # the run's brief.md (mlguild.task.brief): rules, metric, data notes, directions
    reports: tuple[str, ...] = ()  # the most relevant reports of the run's other nodes (mlguild.pools)
    ideas: tuple[str, ...] = ()  # for a draft, improve or evolve: the ideas offered to this node, best first
    why: str = ""  # why the search chose this move on these parents (best, exploring, stagnant, a re-run), in words
    full_limit_s: float | None = None  # the limit a script gets while the run's end is not near
    train_rows: int | None = None  # a row sample's size, when its script trains on one (mlguild.run.samples)
    noise: str = ""  # how far apart two holdout scores must be to differ beyond noise, in one sentence
    earlier_bests: tuple[EarlierBest, ...] = ()  # the configurations of earlier runs' best nodes on this very task
    memory: MemoryQuery | None = None  # asks the memory at proposal time (a planner, with its draft plan)


@dataclass(frozen=True)
class Proposal:
    """A brain's answer: a plan in prose and a complete script, plus meta the brain wants back later."""

    plan: str
    code: str
    meta: NodeMeta = field(default_factory=NodeMeta)
    title: str = ""  # one line for every view (mlguild.core.titles); empty: taken from the plan


class Brain(Protocol):
    """Turns an Action plus its Context into a Proposal. What a brain can do beyond that is
    declared by the capability Protocols below (``Explorer``, ``Fixer``, ``Concurrent``,
    ``HasLastResort``), which the loop checks with ``isinstance``.

    Contract: ``propose`` returns a Proposal, or raises a ``ProposalFailed`` (this proposal
    failed: the node is recorded as failed, the run goes on) or a ``StopRun`` (the run
    cannot go on: a spent budget, a missing key, a task it cannot serve)."""

    name: str

    def propose(self, action: Action, context: Context) -> Proposal: ...


class Policy(Protocol):
    """A small seeded function of the search graph: which action comes next."""

    def select(self, graph: SearchGraph, iteration: int) -> Action: ...


class Sandbox(Protocol):
    """Runs one untrusted script to its end and every process it started with it
    (``mlguild.sandbox``: the contract of ``run`` is on ``SupervisedSandbox.run``)."""

    layer: str
    strong: bool

    def run(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        limits: Limits,
        stdout_path: Path,
        stderr_path: Path,
        data_dir: Path | None = None,
    ) -> ExecResult: ...


class Scorer(Protocol):
    """Validates and scores submissions against sealed labels, outside the sandbox
    (``mlguild.scoring.scorer.Scorer``); a score never comes from anything a script printed."""

    def validate(self, path: str | os.PathLike) -> pd.DataFrame: ...

    def score(self, path: str | os.PathLike) -> Score: ...

    def bootstrap_wins(self, path_a: str | os.PathLike, path_b: str | os.PathLike, seed: int = 0) -> float | None: ...


# ---------------------------------------------------------------- brain capabilities
# Optional: a brain declares one by having its method or attribute, and the loop asks with
# isinstance (these are runtime-checkable), never by probing names with getattr.


@runtime_checkable
class Explorer(Protocol):
    """A brain that writes the exploratory node before the first draft (``Op.EDA``): a
    script that prints findings for the brief, scored by nobody."""

    def explore(self, context: Context) -> Proposal: ...


@runtime_checkable
class Summariser(Protocol):
    """A brain whose model summarises what the exploratory node printed, once per run, for the
    brief that every later request carries (mlguild.run.findings); None when it could not,
    and the harness's digest of the output serves."""

    def summarise_findings(self, context: Context, output: str, failure: str, node: str) -> str | None: ...


@dataclass(frozen=True)
class FixRequest:
    """What a ``Fixer`` (or ``Refiner``) is told about the step of a node's refine loop that just ran."""

    plan: str
    code: str  # the script that ran
    status: str  # how it ended (a FailureKind)
    failure: str  # the harness's message
    stderr: str  # the end of what it printed on stderr
    step: int  # the step that ran, from 1
    timeout_s: float  # the time the next step may have
    node: str  # the node's id (a label for the LLM ledger)
    # What a step that worked printed (untrusted, for the model only: nothing the harness scores).
    stdout: str = ""  # the end of what it printed on stdout
    printed_score: float | None = None  # the validation score it printed ("cv_score: ...")
    trail: tuple[str, ...] = ()  # one line per earlier step of the node: what it did


@runtime_checkable
class Fixer(Protocol):
    """A brain whose proposals (meta ``cycle``) run in a run-observe-fix loop inside their
    node (mlguild.run.fix_loop): it fixes a failed step's script from what the step did."""

    def fix_step(self, request: FixRequest) -> tuple[str, str]:
        """(why, the fixed script)."""
        ...


@runtime_checkable
class Refiner(Protocol):
    """A ``Fixer`` that also improves a step that worked, from the script's own validation
    output (mlguild.run.fix_loop): the loop becomes write, run, observe, refine."""

    def refine_step(self, request: FixRequest) -> tuple[str, str] | None:
        """(why, the improved script), or None when the model judges the script done."""
        ...


@dataclass(frozen=True)
class ReportRequest:
    """What a ``Reporter`` is told about a finished node: the harness's own report of it."""

    node: str
    task: str  # one line: the task's name, type, metric and targets
    plan: str  # the node's plan (for a cycle node: its draft and implementation)
    harness: str  # the harness's report: its numbers, components and limitations (mlguild.pools.reports)


@dataclass(frozen=True)
class WrittenReport:
    """A node's report as the model wrote it from the harness's numbers (stage IV)."""

    method: str
    components: tuple[str, ...]  # each component and what it contributed
    results: str  # what the harness's numbers show
    limitations: tuple[str, ...]
    directions: tuple[str, ...]  # next directions, which enter the idea pool (origin ``report``)
    model: str = ""


@runtime_checkable
class Reporter(Protocol):
    """A brain whose model writes a community-cycle node's report (mlguild.run.cycle_report)."""

    def write_report(self, request: ReportRequest) -> WrittenReport | None:
        """The model's report, or None when this brain writes none (or its reply was unreadable)."""
        ...


@runtime_checkable
class Reviewer(Protocol):
    """A brain whose LLM reviews a script before it runs (mlguild.brains.llm.review): it
    returns the proposal to run, revised once when a finding is serious, with the review's
    record in ``meta["review"]`` (a proposal it does not review comes back unchanged)."""

    def review(self, action: Action, context: Context, proposal: Proposal) -> Proposal: ...


@runtime_checkable
class Concurrent(Protocol):
    """A brain whose ``propose`` may run in several workers' threads at once (what it caches
    is the same whoever fills it); any other brain is asked by one worker at a time."""

    concurrent: Literal[True]


@runtime_checkable
class HasLastResort(Protocol):
    """A brain that proposes a safest pipeline (meta ``LAST_RESORT``) after repeated identical
    failures: the loop stops a run whose nodes all fail the same way only once that failed too."""

    has_last_resort: Literal[True]


# ---------------------------------------------------------------- sandbox capabilities


@runtime_checkable
class Cancellable(Protocol):
    """A sandbox that runs scripts elsewhere (Ray) and can stop them all at once on Ctrl-C."""

    def cancel_all(self) -> None: ...
