"""A run's shared pools: the report of every finished node and the ideas to try.

Both live in ``<run>/pools.sqlite`` (mlguild.pools.store) so that every worker of a run reads
what the others wrote. The idea pool is filled from the task's community corpus when the run
starts (mlguild.pools.extract) and from the reports of nodes that gained; every node that
says it used ideas (meta ``ideas``) is linked to them with its outcome.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import RunError
from ..core.graph import Node, SearchGraph
from ..llm.base import LLM, Message
from ..prompts import render
from ..run.disk_full import full_disk_detail
from ..run.folder import RunDir
from ..task.knowledge import Item, list_items
from .extract import MAX_IDEAS_PER_ITEM, fill_from_corpus, item_excerpt, parse_ideas, rule_ideas
from .ideas import COMMUNITY, REPORT, Idea, IdeaPool, Source, cited_ideas
from .reports import Report, ReportPool, is_reported, report_of
from .store import FILE, PoolStore


@dataclass
class Pools:
    store: PoolStore
    reports: ReportPool
    ideas: IdeaPool

    @classmethod
    def open(cls, run_dir: Path) -> Pools:
        try:
            store = PoolStore.of_run(run_dir)
        except sqlite3.DatabaseError as exc:  # a damaged file: everything in it can be rebuilt
            if full_disk_detail(exc) is not None:  # not damaged: the disk is full (run/disk_full says so)
                raise
            raise RunError(
                f"the run's pools file {run_dir / FILE} cannot be read ({exc})",
                f"move it away (`mv {run_dir / FILE} {run_dir / FILE}.damaged`), then `mlguild resume {run_dir}`: "
                "the reports are rebuilt from the nodes and the ideas from knowledge/",
            ) from exc
        return cls(store, ReportPool(store), IdeaPool(store))

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
        """Put the node's report in the pool, link it to the ideas it used, and keep what a
        gain taught as an idea of its own. The report, or None for a node that has none."""
        if not is_reported(node):
            return None
        report = report_of(node, graph, worker)
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

    def novelty(self, graph: SearchGraph) -> tuple[int, int]:
        """(nodes that used a community idea, nodes that reported): the share of the run's
        attempts that came from the community rather than from the run itself."""
        community = {i.id for i in self.ideas.all() if i.origin == COMMUNITY}
        reported = [n for n in graph if is_reported(n)]
        used = sum(1 for n in reported if community & set(n.meta.get("ideas", ())))
        return used, len(reported)


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


__all__ = ["Idea", "IdeaPool", "PoolStore", "Pools", "Report", "ReportPool", "cited_ideas", "fill_run_ideas"]
