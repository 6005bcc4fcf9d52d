"""The core concepts as small Protocols, and the value types that flow between them.

Implementations are small classes picked by name from tables (``brains.get_brain``,
``sandbox.get_sandbox``, ``search.get_policy``); nothing here imports a heavy library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Op = Literal["draft", "improve", "debug", "fuse"]
# A proposal whose meta has this key set is its brain's safest pipeline: the loop stops a
# run whose nodes all fail the same way only once such a proposal has failed that way too.
LAST_RESORT = "last_resort"


@dataclass(frozen=True)
class Action:
    """What the policy decided to do next: an operation on zero or more parent nodes."""

    op: Op
    parents: tuple[str, ...] = ()
    reason: str = ""


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
    meta: dict[str, Any] = field(default_factory=dict)
    stdout_tail: str = ""
    stderr_tail: str = ""


@dataclass(frozen=True)
class HistoryItem:
    """One earlier node, summarised: enough to avoid repeating work, small enough to stay bounded."""

    node_id: str
    op: str
    status: str
    score: float | None
    meta: dict[str, Any]
    exec_s: float | None = None  # how long its script ran (None: it never ran)
    failure: str | None = None  # the end of its failure message, when it failed


@dataclass(frozen=True)
class Context:
    """Everything a brain sees for one proposal. Context is isolated on purpose: the task, the
    data profile and the parents — plus a bounded summary of history — never every node's code."""

    task: dict[str, Any]  # TaskSpec.public_dict()
    description: str
    profile: dict[str, Any]  # mlguild.profile.DataProfile.to_dict()
    parents: tuple[ParentView, ...]
    history: tuple[HistoryItem, ...]
    direction: str  # "maximize" | "minimize"
    script_timeout_s: float
    seed: int
    iteration: int
    stagnation: int = 0  # attempts in the parent's branch since it last improved


@dataclass(frozen=True)
class Proposal:
    """A brain's answer: a plan in prose and a complete script, plus meta the brain wants back later."""

    plan: str
    code: str
    meta: dict[str, Any] = field(default_factory=dict)


class Brain(Protocol):
    """Turns an Action plus its Context into a Proposal. A brain that can propose a safest
    pipeline (meta ``LAST_RESORT``) after repeated identical failures says so with
    ``has_last_resort = True``."""

    name: str

    def propose(self, action: Action, context: Context) -> Proposal: ...


class Policy(Protocol):
    """A small seeded function of the search graph: which action comes next."""

    def select(self, graph: Any, iteration: int) -> Action: ...
