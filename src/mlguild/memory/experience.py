"""Experience records: what one finished node taught, small enough to show in a prompt.

A record says what the node tried (its plan's first line, the change against its parent, the
recipe and move), how it went by the harness's numbers (holdout score, the change against its
parent, run time against the parent's) or how it failed (the diagnosed cause), and the traits
of the task it ran on, so that a record can be found again on a similar task. Nothing in it
comes from sealed labels beyond the holdout scores the search itself uses.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..coder.diagnose import diagnose
from ..core.graph import Node, SearchGraph
from ..core.meta import NodeMeta
from ..core.score import POOLED_LABEL
from ..core.vocabulary import Op

# outcomes
FIRST = "first"  # scored, with no scored parent to compare with (a draft, a fuse, a repair)
GAIN = "gain"  # scored better than its parent
NO_GAIN = "no_gain"  # scored, not better than its parent
FAILED = "failed"
CUT_SHORT = "cut_short"  # timed out under a limit the run's end had shortened: says nothing of its change

_PLAN_CHARS = 300
_TEXT_CHARS = 240


@dataclass(frozen=True)
class TaskTraits:
    """What makes two tasks alike for the purpose of reusing what worked."""

    task_type: str
    metric: str
    rows: int
    columns: int
    modality: str  # "tabular", "text" (a text column), "image" (an image column), "mixed"
    missing_share: float  # mean share of missing cells over the input columns
    max_cardinality: int  # most distinct values of a categorical column

    @classmethod
    def of(cls, task: dict[str, Any], profile: dict[str, Any]) -> TaskTraits:
        columns = profile.get("columns", [])
        kinds = {c["kind"] for c in columns}
        special = [m for m in ("text", "image") if m in kinds or task.get(f"{m}_columns")]
        modality = "tabular" if not special else special[0] if len(special) == 1 else "mixed"
        missing = [float(c.get("missing_fraction") or 0.0) for c in columns]
        return cls(
            task_type=str(task["task_type"]),
            metric=str(task["metric"]),
            rows=int(profile.get("n_train") or 0),
            columns=len(columns),
            modality=modality,
            missing_share=round(sum(missing) / len(missing), 4) if missing else 0.0,
            max_cardinality=max(
                (int(c.get("n_unique") or 0) for c in columns if c["kind"] == "categorical"), default=0
            ),
        )

    def distance(self, other: TaskTraits) -> float:
        """0 for the same traits; a different task type adds 3, a different metric or
        modality 1 each, and sizes count by orders of magnitude."""

        def magnitude(a: int, b: int) -> float:
            return abs(math.log10(max(a, 1)) - math.log10(max(b, 1)))

        return (
            3.0 * (self.task_type != other.task_type)
            + 1.0 * (self.metric != other.metric)
            + 1.0 * (self.modality != other.modality)
            + magnitude(self.rows, other.rows)
            + 0.5 * magnitude(self.columns, other.columns)
            + 0.5 * magnitude(self.max_cardinality + 1, other.max_cardinality + 1)
            + abs(self.missing_share - other.missing_share)
        )


@dataclass(frozen=True)
class Experience:
    run: str
    task: str
    node: str
    op: str
    status: str  # "scored" or a failure kind
    outcome: str  # FIRST, GAIN, NO_GAIN, FAILED or CUT_SHORT
    title: str  # the node's title (mlguild.core.titles)
    plan: str  # the plan's start, bounded
    change: str  # what changed against the parent, or the failure's cause
    recipe: str
    move: str
    score: float | None
    parent: str
    parent_score: float | None
    gain_spreads: float | None  # change against the parent in the better direction, in score spreads
    cost_ratio: float | None  # run time over the parent's
    exec_s: float | None
    traits: TaskTraits
    # What a later run on this task needs to make the node again: a recipe node's settings
    # (recipe, params, features, run, the moves that led there), or a blend's members
    # ({"fuse": [node ids]}); None for a node no recipe wrote.
    config: dict[str, Any] | None = None
    # The run's best node when this record was written (the search's own choice, its evidence
    # rules included): the newest record of a run names the best that run found.
    run_best: str = ""
    pooled: bool = False  # ``score`` is the pooled score of a small holdout (a record made before: False)
    # The task's name, for people and prompts; ``task`` is its identity, the data's key
    # (mlguild.task.identity). Empty in a record made before: ``task`` was the name then.
    name: str = ""

    def text(self) -> str:
        """What full-text search reads."""
        return " ".join([self.op, self.status, self.outcome, self.recipe, self.move, self.plan, self.change])

    def line(self, source: bool = False) -> str:
        """One bounded line for a prompt; with ``source``, it names the run and the task it
        came from (a record of another run)."""
        task = self.name or self.task
        where = f"run {self.run}, task {task}: " if source else f"{task} "
        head = f"[{where}{self.node}, {self.op}" + (f" of {self.parent}" if self.parent else "") + "] "
        if self.outcome in (FAILED, CUT_SHORT):
            result = f"failed ({self.status}): {self.change}"
        else:
            score = f"{self.score:.5g}" if self.score is not None else "?"
            score += f" ({POOLED_LABEL})" if self.pooled else ""
            against = ""
            if self.parent_score is not None:
                against = f" vs parent {self.parent_score:.5g} ({'better' if self.outcome == GAIN else 'not better'})"
            timing = f", ×{self.cost_ratio:.2f} the parent's time" if self.cost_ratio else ""
            said = self.change if self.change and self.change != self.title else ""
            result = f"scored {score}{against}{timing}" + (f": {said}" if said else "")
        return _cut(f"{head}{self.title or self.recipe} -> {result}", 2 * _TEXT_CHARS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experience:
        # A record written by another version (the store is shared across versions) may lack
        # a field this one has (its default holds) or have one this one lacks (left out).
        known = {f.name for f in fields(cls)}
        return cls(
            **{k: v for k, v in data.items() if k in known and k != "traits"}, traits=TaskTraits(**data["traits"])
        )


class ScoreSpread:
    """The spread (standard deviation) of the scores seen so far, updated one score at a
    time (Welford), so that a gain can be said in units of it whatever the metric."""

    def __init__(self) -> None:
        self.n, self._mean, self._m2 = 0, 0.0, 0.0
        self._first: float | None = None

    def add(self, score: float) -> None:
        self.n += 1
        self._first = score if self._first is None else self._first
        delta = score - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (score - self._mean)

    def value(self) -> float:
        spread = math.sqrt(self._m2 / self.n) if self.n >= 2 else 0.0
        return spread or max(1e-9, abs(self._first) * 0.01 if self._first is not None else 1.0)


def experience_of(
    node: Node,
    graph: SearchGraph,
    run: str,
    task: str,
    traits: TaskTraits,
    spread: float,
    code: str = "",
    columns: list[str] | tuple[str, ...] = (),
    name: str = "",
) -> Experience:
    """The record of a finished node. ``spread`` is the spread of the task's scores (a gain is
    recorded in units of it); ``code`` (its solution.py) and ``columns`` (the task's input
    columns) sharpen the diagnosis of a failure."""
    parent = graph.nodes.get(node.parents[0]) if node.parents and node.op in (Op.IMPROVE, Op.DEBUG) else None
    meta = node.meta
    change = _change(meta)
    gain = cost = None
    if not node.ok and node.timing.get("cut_short"):
        outcome = CUT_SHORT
        change = f"cut short: the run's time ran out after {node.timing.get('budget_s', '?')} s of it"
    elif not node.ok:
        outcome = FAILED
        change = diagnose(node.failure or "", code, columns).summary()
    elif parent is None or not parent.ok:
        outcome = FIRST
    else:
        better = graph.score_of(node).better_than(graph.score_of(parent))
        outcome = GAIN if better else NO_GAIN
        sign = 1.0 if graph.direction == "maximize" else -1.0
        gain = round(sign * (node.score - parent.score) / spread, 6)  # type: ignore[operator]
    exec_s, parent_s = node.timing.get("exec_s"), parent.timing.get("exec_s") if parent is not None else None
    if exec_s and parent_s:
        cost = round(exec_s / parent_s, 4)
    return Experience(
        run=run,
        task=task,
        name=name,
        node=node.id,
        op=node.op,
        status=node.status,
        outcome=outcome,
        title=node.title
        or _cut(next((ln.strip("#*- ") for ln in node.plan.splitlines() if ln.strip("#*- ")), ""), 120),
        plan=_cut(node.plan.strip(), _PLAN_CHARS),
        change=_cut(change, _TEXT_CHARS),
        recipe=str(meta.get("recipe") or ""),
        move=str(meta.get("move") or ""),
        score=node.score if node.ok else None,
        parent=parent.id if parent is not None else "",
        parent_score=parent.score if parent is not None and parent.ok else None,
        gain_spreads=gain,
        cost_ratio=cost,
        exec_s=exec_s,
        traits=traits,
        config=recipe_config(meta),
        run_best=best.id if (best := graph.best()) is not None else "",
        pooled=node.ok and node.holdout_score is not None,
    )


# The parts of a recipe node's meta its script is rendered from (brains/recipes/render), and
# how it got there.
_CONFIG_KEYS = ("recipe", "modality", "params", "features", "run", "moves")


def recipe_config(meta: NodeMeta) -> dict[str, Any] | None:
    """What makes a node again (see ``Experience.config``): a blend's members, a recipe
    node's settings, else None."""
    if meta.get("fuse"):
        return {"fuse": [str(m) for m in meta["fuse"]]}
    if meta.get("brain") != "recipes" or not meta.get("recipe") or not isinstance(meta.get("params"), dict):
        return None
    plain: dict[str, Any] = dict(meta)  # the settings by name, in _CONFIG_KEYS's order
    config = {key: copy.deepcopy(plain[key]) for key in _CONFIG_KEYS if key in plain}
    if meta.get("reference") and not meta.get("parent"):
        config["reference"] = str(meta["reference"])  # the baseline ladder's rung it was (run/references)
    return config


def _change(meta: NodeMeta) -> str:
    """What the brain said it changed: a recipe's changed parameters, else its summary."""
    changed = meta.get("changed")
    if isinstance(changed, dict) and changed:
        parts = [f"{k.split('.', 1)[-1]} {v[0]!r}->{v[1]!r}" for k, v in changed.items() if isinstance(v, list | tuple)]
        return f"{meta.get('move', 'change')}: {', '.join(parts)}"
    return str(meta.get("summary") or meta.get("move") or "")


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
