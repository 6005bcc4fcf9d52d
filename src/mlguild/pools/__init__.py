"""A run's shared pools: the report of every finished node and the ideas to try.

Both live in ``<run>/pools.sqlite`` (mlguild.pools.store) so that every worker of a run reads
what the others wrote. The idea pool is filled from the task's community corpus when the run
starts (mlguild.pools.extract) and from the reports of nodes that gained; every node that
says it used ideas (meta ``ideas``) is linked to them with its outcome. Every report says how
much of its node's script is a community item's code (mlguild.pools.novelty).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import RunError
from ..core.graph import Node, SearchGraph
from ..core.protocols import WrittenReport
from ..llm.base import LLM, Message
from ..memory import TaskTraits
from ..prompts import render
from ..rundir.disk_full import full_disk_detail
from ..rundir.folder import RunDir
from ..task.knowledge import Item, list_items
from ..util.fs import read_text_no_follow
from .extract import MAX_IDEAS_PER_ITEM, fill_from_corpus, item_excerpt, parse_ideas, rule_ideas
from .guild import earlier_records, fill_guild, shared_store, similar_records
from .ideas import COMMUNITY, REPORT, Idea, IdeaPool, Source, cited_ideas
from .novelty import CommunityCode, Overlap
from .reports import Report, ReportPool, is_reported, report_of, with_written
from .store import FILE, PoolStore


@dataclass
class Pools:
    store: PoolStore
    reports: ReportPool
    ideas: IdeaPool
    run_dir: Path | None = None  # where the nodes' scripts are (None: no overlap is measured)
    community: CommunityCode | None = None  # the knowledge items' code, for the overlap of each script
    # The model's reports of nodes about to finish (stage IV, mlguild.run.cycle_report):
    # ``node_finished`` takes each in place of the harness's own.
    written: dict[str, WrittenReport] = field(default_factory=dict)

    @classmethod
    def open(cls, run_dir: Path, community: CommunityCode | None = None) -> Pools:
        """The run's pools; with ``community``, every report a node adds measures its overlap."""
        try:
            store = PoolStore.of_run(run_dir)
        except sqlite3.DatabaseError as exc:  # a damaged file: everything in it can be rebuilt
            if full_disk_detail(exc) is not None:  # not damaged: the disk is full (rundir/disk_full says so)
                raise
            raise RunError(
                f"the run's pools file {run_dir / FILE} cannot be read ({exc})",
                f"move it away (`mv {run_dir / FILE} {run_dir / FILE}.damaged`), then `mlguild resume {run_dir}`: "
                "the reports are rebuilt from the nodes and the ideas from knowledge/",
            ) from exc
        return cls(store, ReportPool(store), IdeaPool(store), run_dir, community)

    def close(self) -> None:
        self.store.close()

    def fill_ideas(self, items: list[Item], ask: Callable[[Item], str] | None) -> tuple[int, int, str]:
        """Read the corpus items not read yet into the idea pool: with ``ask`` (an LLM: the
        item in, its reply out) when given, by rules otherwise or when the model fails on an
        item (a failed request, an unreadable reply). (items read, ideas kept, who read them)."""
        used = {"llm": 0, "rules": 0}

        def read(item: Item) -> list[str]:
            if ask is not None:
                try:
                    found = parse_ideas(ask(item))
                except Exception:  # a failed request: the rules still read the item
                    found = []
                if found:
                    used["llm"] += 1
                    return found
            used["rules"] += 1
            return rule_ideas(item)

        read_n, ideas = fill_from_corpus(self.ideas, items, read)
        who = "an LLM" if used["llm"] and not used["rules"] else "rules" if not used["llm"] else "an LLM and rules"
        return read_n, ideas, who

    def node_finished(self, node: Node, graph: SearchGraph, worker: str = "") -> Report | None:
        """Put the node's report in the pool (the model's, when it wrote one), link it to the
        ideas it used, and keep what a gain taught and the model's next directions as ideas of
        their own. The report, or None for a node that has none."""
        written = self.written.pop(node.id, None)
        if not is_reported(node):
            return None
        report = report_of(node, graph, worker, self.overlap(node))
        if written is not None:
            report = with_written(report, written)
            for direction in report.directions:
                try:
                    self.ideas.add(direction, REPORT, Source(node.id, title="next direction", kind="report"))
                except ValueError:  # no content words: not an idea
                    continue
        self.reports.add(report)
        for idea_id in report.ideas:
            self.ideas.record_trial(idea_id, node.id, report.outcome)
        if report.outcome in ("gain", "new best") and report.helped.startswith("helped: "):
            lesson = report.helped.removeprefix("helped: ")
            what = node.meta.get("recipe") or node.meta.get("family") or ""
            try:
                idea = self.ideas.add(
                    f"{lesson} (on {what})" if what else lesson, REPORT, Source(node.id, kind="report")
                )
            except ValueError:
                return report
            self.ideas.record_trial(idea.id, node.id, report.outcome)
        return report

    def sync(self, graph: SearchGraph, worker: str = "") -> int:
        """Add the report of every finished node the pool lacks (a resume after a kill)."""
        return self.reports.sync(graph, worker, self.overlap)

    def overlap(self, node: Node) -> Overlap | None:
        """The largest share of the node's script found in one community item's code."""
        if self.community is None or self.run_dir is None:
            return None
        try:
            code = read_text_no_follow(self.run_dir / "nodes" / node.id / "solution.py")
        except OSError:  # no script (a brain error): nothing to compare
            return None
        return self.community.closest(code)

    def copying(self) -> tuple[Report | None, int, int]:
        """(the report whose script overlaps one community item's code the most, the number of
        near-copies, the number of reports whose overlap was measured)."""
        measured = [r for r in self.reports.all() if r.overlap is not None and not r.run]
        largest = max(measured, key=lambda r: r.overlap or 0.0, default=None)
        return largest, sum(r.near_copy for r in measured), len(measured)

    def novelty(self, graph: SearchGraph) -> tuple[int, int]:
        """(nodes that used a community idea, nodes that reported): the share of the run's
        attempts that came from the community rather than from the run itself."""
        community = {i.id for i in self.ideas.all() if i.origin == COMMUNITY}
        reported = [n for n in graph if is_reported(n)]
        used = sum(1 for n in reported if community & set(n.meta.get("ideas", ())))
        return used, len(reported)


def community_code(run: RunDir) -> CommunityCode:
    """The code of the run's task's knowledge items, to measure each script's overlap with."""
    return CommunityCode(run.config.pools.near_copy_overlap, run.task_root)


def fill_run_guild(run: RunDir, pools: Pools) -> str | None:
    """Put what earlier runs of this task and of similar tasks learnt (the shared memory's
    records) into the pools, as reports and ideas, a similar task's weighted
    (mlguild.pools.guild); a line saying what was added, or None."""
    store = shared_store(run.config)
    if store is None:
        return None
    traits = TaskTraits.of(run.spec.public_dict(), run.profile.to_dict())
    try:
        key = run.task_key  # the task's data, not its folder name (task/identity)
        records = earlier_records(store, key, run.path.name)
        similar = similar_records(store, key, run.path.name, traits, run.config.memory.max_distance)
    finally:
        store.close()
    ideas_before = len(pools.ideas.all())
    added = fill_guild(pools.reports, pools.ideas, records)
    weights = {(exp.run, exp.node): weight for exp, weight in similar}
    added_similar = fill_guild(pools.reports, pools.ideas, [e for e, _ in similar], lambda e: weights[e.run, e.node])
    if not added and not added_similar:
        return None
    runs = len({r.run for r in records})
    line = f"guild: {added} report(s) of {runs} earlier run(s) of this task"
    if added_similar:
        tasks = len({e.task for e, _ in similar})
        line += f" and {added_similar} of {tasks} similar task(s), weighted by similarity and measured transfer"
    return f"{line}; {len(pools.ideas.all()) - ideas_before} new idea(s) from what gained there"


def fill_run_ideas(run: RunDir, pools: Pools, llm: LLM | None) -> str | None:
    """Fill the run's idea pool from its task's knowledge/ folder (the items not read yet);
    a line saying what was done, or None when there was nothing to read."""
    cfg = run.config.pools
    items = list_items(run.task_root) if cfg.ideas_from_knowledge and run.task_root.is_dir() else []
    if not items:
        return None
    ask = None
    if llm is not None and cfg.llm_extraction:
        summary = f"{run.spec.name}: {run.spec.task_type}, metric {run.spec.metric}, target {', '.join(run.spec.target_columns)}"

        def ask(item: Item) -> str:
            prompt = render("ideas", task_summary=summary, item=item, text=item_excerpt(item), limit=MAX_IDEAS_PER_ITEM)
            return llm.complete([Message("user", prompt)], max_tokens=1500, purpose="ideas", node="").text

    read, kept, who = pools.fill_ideas(items, ask)
    if not read:
        return f"ideas {len(pools.ideas.all())} in the pool (its {len(items)} knowledge items were read before)"
    return f"ideas {kept} from {read} knowledge item(s), read by {who}; {len(pools.ideas.all())} in the pool"


__all__ = [
    "CommunityCode",
    "Idea",
    "IdeaPool",
    "Overlap",
    "PoolStore",
    "Pools",
    "Report",
    "ReportPool",
    "cited_ideas",
    "community_code",
    "fill_run_guild",
    "fill_run_ideas",
]
