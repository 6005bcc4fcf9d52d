"""A guild of runs: what earlier runs of the same task learnt enters a new run's pools.

A run's pools start empty, but the memory store (``memory.path``, shared by every run that
uses it) keeps a record of every node of every earlier run. When a run starts, the records of
earlier runs of the same task (the same data: ``mlguild.task.identity``) become community items of this run:

* each as a report in the report pool (keyed ``RUN/NODE``, so it never meets one of this
  run's nodes), its outcome and score in the earlier run's own holdout numbers;
* each move or draft that gained there as an idea in the idea pool, with that run's node as
  its source and the gain it measured (in score spreads) as its signal, so a gain that was
  large ranks its idea high, the way votes rank a post's.

Earlier runs of similar tasks (the same task type, within ``memory.max_distance``) enter too,
each record weighted by how much it counts here (mlguild.memory.record_weight): its task's
similarity, 1 / (1 + distance), times the measured transfer of gains between the store's
tasks. A report's weight scales its relevance when a prompt's reports are chosen, an idea's
its signal; a record whose weight is below ``MIN_WEIGHT`` (every one, while the store has not
shown that gains carry over between tasks) stays out, so a store of unrelated tasks adds
nothing. Records of this task count in full.

They are read once: a resume or a second session adds only what is new. ``mlguild knowledge
list`` shows them beside the task's posts and notebooks, a similar task's with its weight.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..config import Config, mlguild_home
from ..memory import MemoryStore, TaskTraits, prior_records, record_weight
from ..memory.experience import CUT_SHORT, FAILED, FIRST, GAIN, Experience
from ..memory.priors import measure_transfer
from .ideas import COMMUNITY, IdeaPool, Source
from .reports import Report, ReportPool

GUILD_RECORDS = 60  # most records of earlier runs read into a new run's pools, newest first
SIMILAR_RECORDS = 30  # most records of similar tasks' runs read into a new run's pools, weightiest first
MIN_WEIGHT = 0.05  # a similar task's record counting less than this stays out
RUN_SOURCE = "run"  # an idea source's kind when the idea is an earlier run's node


def shared_store(config: Config) -> MemoryStore | None:
    """The shared memory store runs write to, or None when memory is off or it does not exist yet."""
    if not config.memory.enabled:
        return None
    path = Path(config.memory.path).expanduser() if config.memory.path else mlguild_home() / "memory.sqlite"
    return MemoryStore(path) if path.is_file() else None


def earlier_records(store: MemoryStore, task: str, this_run: str) -> list[Experience]:
    """The records of earlier runs of ``task`` (not ``this_run``), newest first; nodes cut short
    by a run's end are left out (they say nothing about their change)."""
    found = store.recent(GUILD_RECORDS, task=task, exclude_run=this_run)
    return [exp for _, exp in found if exp.outcome != CUT_SHORT]


def similar_records(
    store: MemoryStore, task: str, this_run: str, traits: TaskTraits, max_distance: float
) -> list[tuple[Experience, float]]:
    """Records of earlier runs of other tasks like ``task`` (its ``traits``, within
    ``max_distance``), each with its weight (see the module's note), weightiest first, the
    newest first among equals; nodes cut short are left out."""
    records = prior_records(store, traits.task_type, this_run)
    transfer = measure_transfer(records, task, max_distance)
    found = []
    for exp in records:
        if exp.task == task or exp.outcome == CUT_SHORT or exp.traits.distance(traits) > max_distance:
            continue
        weight = record_weight(exp, task, traits, transfer)
        if weight >= MIN_WEIGHT:
            found.append((exp, weight))
    return sorted(found, key=lambda pair: -pair[1])[:SIMILAR_RECORDS]  # stable: newest first among equals


def task_traits(store: MemoryStore, task: str) -> TaskTraits | None:
    """The traits the store's newest record of ``task`` holds (None: no run of it is stored)."""
    found = store.recent(1, task=task)
    return found[0][1].traits if found else None


def report_of_record(exp: Experience, weight: float = 1.0) -> Report:
    """An earlier run's node as a report of this run's pool, in that run's own numbers (a
    similar task's saying so, with its ``weight``)."""
    if exp.outcome == FAILED:
        result, helped = f"failed ({exp.status})", ""
    else:
        against = f" against its parent's {exp.parent_score:.5g}" if exp.parent_score is not None else ""
        score = f"{exp.score:.5g}" if exp.score is not None else "?"
        result = f"holdout {score}{against} in run {exp.run}"
        if weight < 1.0:
            result += f" on the similar task {exp.name or exp.task} (weight {weight:.2f})"
        helped = f"{'helped' if exp.outcome == GAIN else 'did not help'}: {exp.change}" if exp.change else ""
    return Report(
        node=f"{exp.run}/{exp.node}",
        op=exp.op,
        parents=(f"{exp.run}/{exp.parent}",) if exp.parent else (),
        worker="",
        outcome=exp.outcome.replace("_", " "),
        score=exp.score,
        method=exp.title or exp.recipe or exp.op,
        components=tuple(f"{k}: {v}" for k, v in (("recipe", exp.recipe), ("move", exp.move)) if v),
        result=result,
        helped=helped,
        limitations=(f"failed as {exp.status}: {exp.change}",) if exp.outcome == FAILED else (),
        ideas=(),
        run=exp.run,
        weight=weight,
    )


def fill_guild(
    reports: ReportPool,
    ideas: IdeaPool,
    records: list[Experience],
    weight_of: Callable[[Experience], float] = lambda exp: 1.0,
) -> int:
    """Add the earlier runs' ``records`` the pools lack: every record as a report, and each
    gain (a move that beat its parent, or a scored draft) as an idea whose signal is the gain
    (the same idea from several runs is one idea with several sources), each counting by
    ``weight_of`` (1: a run of this task). Reports added."""
    have = set(reports.store.keys("reports"))
    added = 0
    for exp in records:
        key = f"{exp.run}/{exp.node}"
        if key in have:
            continue
        weight = weight_of(exp)
        reports.add(report_of_record(exp, weight))
        added += 1
        if exp.outcome not in (GAIN, FIRST) or not exp.title:
            continue
        gain = exp.gain_spreads if exp.gain_spreads is not None else 0.0
        if exp.outcome == GAIN and gain <= 0:
            continue
        try:
            ideas.add(exp.title, COMMUNITY, Source(key, title=exp.title, kind=RUN_SOURCE, gain=gain, weight=weight))
        except ValueError:  # nothing an idea can be made of
            continue
    return added
