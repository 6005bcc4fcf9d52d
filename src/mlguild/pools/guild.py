"""A guild of runs: what earlier runs of the same task learnt enters a new run's pools.

A run's pools start empty, but the memory store (``memory.path``, shared by every run that
uses it) keeps a record of every node of every earlier run. When a run starts, the records of
earlier runs of the same task (the same task name) become community items of this run:

* each as a report in the report pool (keyed ``RUN/NODE``, so it never meets one of this
  run's nodes), its outcome and score in the earlier run's own holdout numbers;
* each move or draft that gained there as an idea in the idea pool, with that run's node as
  its source and the gain it measured (in score spreads) as its signal, so a gain that was
  large ranks its idea high, the way votes rank a post's.

They are read once: a resume or a second session adds only what is new. ``mlguild knowledge
list`` shows them beside the task's posts and notebooks. Records of merely similar tasks stay
in the memory's own recall (mlguild.memory), weighted there by the measured transfer.
"""

from __future__ import annotations

from pathlib import Path

from ..config import Config, mlguild_home
from ..memory import MemoryStore
from ..memory.experience import CUT_SHORT, FAILED, FIRST, GAIN, Experience
from .ideas import COMMUNITY, IdeaPool, Source
from .reports import Report, ReportPool

GUILD_RECORDS = 60  # most records of earlier runs read into a new run's pools, newest first
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


def report_of_record(exp: Experience) -> Report:
    """An earlier run's node as a report of this run's pool, in that run's own numbers."""
    if exp.outcome == FAILED:
        result, helped = f"failed ({exp.status})", ""
    else:
        against = f" against its parent's {exp.parent_score:.5g}" if exp.parent_score is not None else ""
        score = f"{exp.score:.5g}" if exp.score is not None else "?"
        result = f"holdout {score}{against} in run {exp.run}"
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
    )


def fill_guild(reports: ReportPool, ideas: IdeaPool, records: list[Experience]) -> int:
    """Add the earlier runs' ``records`` the pools lack: every record as a report, and each
    gain (a move that beat its parent, or a scored draft) as an idea whose signal is the gain
    (the same idea from several runs is one idea with several sources). Reports added."""
    have = set(reports.store.keys("reports"))
    added = 0
    for exp in records:
        key = f"{exp.run}/{exp.node}"
        if key in have:
            continue
        reports.add(report_of_record(exp))
        added += 1
        if exp.outcome not in (GAIN, FIRST) or not exp.title:
            continue
        gain = exp.gain_spreads if exp.gain_spreads is not None else 0.0
        if exp.outcome == GAIN and gain <= 0:
            continue
        try:
            ideas.add(exp.title, COMMUNITY, Source(key, title=exp.title, kind=RUN_SOURCE, gain=gain))
        except ValueError:  # nothing an idea can be made of
            continue
    return added
