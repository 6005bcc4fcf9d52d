"""A search that scales with rows: nested random samples of a large training table, and
which node trains on which (successive halving).

On a table with more training rows than ``search.sample_above_rows``, a script fitted on all
of them costs so much of the budget that the search could try only a few ideas. So the
search first trains on samples: a ladder of sizes, each ``sample_factor`` times the one
below, from ``sample_min_rows`` up to every row (``ladder``).

- A draft trains on the largest sample the time allows: one whose cost, measured on this run
  (the costliest of the nodes so far, their fitting seconds scaled in rows:
  ``rows_scaled_seconds``; a node killed by its time limit counts all its seconds, scaled),
  leaves time for ``_CANDIDATES`` such scripts in the time left, and is smaller than any
  sample a script ran out of memory on; the smallest before anything was measured
  (``RowPlan.draft_rows``). The costliest, not the median: the next draft's family is not
  known, and a linear reference fits a hundred times faster than a boosted one.
- A move that starts from a node's script (an improve, a debug, a re-run for evidence)
  trains on its parent's sample, so the two compare on equal terms; a debug of a script
  that ran out of memory trains on the next smaller sample.
- Once three nodes of one size have scores (``sample_factor``, when fewer), the best of them
  (the top share, one per ``sample_factor``) runs again, unchanged, on the next larger sample:
  a ``grow`` node, the harness's own move (``RowPlan.promotion``), when the time left allows it.
- A blend reads its members' stored predictions and trains on none of the rows; the final
  refit trains every chosen script on every labelled row, whatever sample it searched on (on
  as many as the time left allows, when that is not all of them: mlguild.final.stage).

Every node is scored on the same sealed holdout rows, so scores compare across sizes (a node
that saw more rows is usually better, which is what the final refit wants). The samples are
nested (every sample holds the smaller ones' rows: one seeded order, taken from its start),
which also keeps the out-of-fold rows of nodes of different sizes overlapping for a blend. A
task whose rows come in groups (a ranking's, or a ``group_column``) is sampled by whole groups.
The sample's files are the workspace's: its training file a subset of the workspace's rows,
every other file a hard link, so a sample holds no row the workspace does not.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..config.search import SearchConfig
from ..core.graph import Node, SearchGraph
from ..core.meta import NodeMeta
from ..core.protocols import Action, Proposal
from ..core.vocabulary import FailureKind, Op
from ..rundir.folder import RunDir
from ..util.exact_csv import read_csv_exact, write_rows
from ..util.parquet import parquet_of, write_rows_parquet

SAMPLES = "samples"  # beside the workspace's data folder: run/<id>/workspace/samples/<rows>/
_CANDIDATES = 10  # a draft's sample leaves time for this many scripts of its cost in the time left
_COMPETITORS = 3  # nodes of one size compared before its best grows (fewer when sample_factor is)
_SEED = 20_240  # the samples' row order: fixed, so every session and every size agree
_OWN_DATA = (Op.BLEND, Op.REFIT)  # a blend reads stored predictions; a refit is given every row
_building = threading.Lock()


def ladder(n_train: int, cfg: SearchConfig) -> list[int]:
    """The sizes the search trains on, smallest first and every row last; empty when the
    table is not sampled (``row_samples`` off, or no more rows than ``sample_above_rows``)."""
    if not cfg.row_samples or n_train <= cfg.sample_above_rows:
        return []
    sizes = [n_train]
    while sizes[-1] // cfg.sample_factor >= cfg.sample_min_rows:
        sizes.append(sizes[-1] // cfg.sample_factor)
    return sorted(sizes) if len(sizes) > 1 else []


def node_rows(node: Node, n_train: int) -> int:
    """The training rows ``node``'s script read: its sample's, else all ``n_train``."""
    rows = node.meta.get("train_rows")
    return int(rows) if rows else n_train


def rows_scaled_seconds(node: Node, factor: float) -> float:
    """``node``'s script's seconds on ``factor`` times the training rows it read: the seconds it
    said it spent fitting (``fit_s``: mlguild.run.executor) grow in proportion, the rest
    (reading the files, predicting the holdout and test rows, which do not change) stays; all of
    them grow when it said nothing. (On ten million rows a LightGBM fitted on 120,000 spent
    7 s fitting and 82 s predicting two million test rows.)"""
    exec_s = float(node.timing.get("exec_s") or 0.0)
    fit_s = node.timing.get("fit_s")
    if fit_s is None:
        return exec_s * factor
    return max(0.0, exec_s + min(float(fit_s), exec_s) * (factor - 1))


@dataclass(frozen=True)
class RowPlan:
    """Which sample each node trains on, for a training file of ``n_train`` rows."""

    n_train: int
    sizes: tuple[int, ...]  # ascending, the last every row; empty: no samples
    factor: int

    @classmethod
    def of(cls, run: RunDir) -> RowPlan:
        cfg = run.config.search
        n_train = int(run.workspace.manifest().get("split", {}).get("train_rows") or run.profile.n_train)
        return cls(n_train, tuple(ladder(n_train, cfg)), cfg.sample_factor)

    def assign(self, action: Action, graph: SearchGraph, time_left_s: float | None) -> Action:
        """``action`` with the rows its script trains on (``Action.rows``: None for all)."""
        if not self.sizes or action.op in _OWN_DATA or action.op == Op.GROW:
            return action
        parent = graph.nodes.get(action.parents[0]) if action.parents else None
        if parent is not None and action.op == Op.DEBUG and parent.status == FailureKind.MEMORY:
            rows: int | None = self.below(node_rows(parent, self.n_train))
        elif parent is not None and action.op != Op.DRAFT:
            rows = node_rows(parent, self.n_train)
        else:
            rows = self.draft_rows(graph, time_left_s)
        return replace(action, rows=None if rows == self.n_train else rows)

    def below(self, rows: int) -> int:
        """The largest sample smaller than ``rows`` (the smallest when none is)."""
        return max((size for size in self.sizes if size < rows), default=self.sizes[0])

    def draft_rows(self, graph: SearchGraph, time_left_s: float | None) -> int:
        """The largest sample whose expected seconds (the most, over the nodes this run ran,
        of each one's seconds scaled to that many rows: ``rows_scaled_seconds``, all of them
        for a node killed by its limit, which said nothing of its fitting) leave time for
        ``_CANDIDATES`` such scripts in ``time_left_s``, and under every sample a script ran
        out of memory on; the smallest with nothing measured or no time budget."""
        ran = [n for n in graph if n.op not in (*_OWN_DATA, Op.EDA) and (n.timing.get("exec_s") or 0) > 0]
        measured = [n for n in ran if n.ok or n.status == FailureKind.TIMEOUT]
        if not measured or time_left_s is None:
            return self.sizes[0]
        too_big = min((node_rows(n, self.n_train) for n in ran if n.status == FailureKind.MEMORY), default=None)

        def expected(size: int) -> float:
            return max(
                rows_scaled_seconds(n, size / node_rows(n, self.n_train))
                if n.ok
                else float(n.timing["exec_s"]) * size / node_rows(n, self.n_train)
                for n in measured
            )

        fitting = [
            size
            for size in self.sizes
            if expected(size) * _CANDIDATES <= time_left_s and (too_big is None or size < too_big)
        ]
        return fitting[-1] if fitting else self.sizes[0]

    def promotion(self, graph: SearchGraph, limit_s: float, key: Callable[[Node], float]) -> Action | None:
        """A ``grow`` of the next node due on more rows, or None: at the largest sample with
        three scored nodes (``factor``, when fewer), the best share of them (one per
        ``factor``, best first by ``key``) not grown yet, whose script scaled to the next size
        fits ``limit_s``."""
        grown = {n.parents[0] for n in graph if n.op == Op.GROW and n.parents}
        for size, bigger in reversed(list(zip(self.sizes, self.sizes[1:], strict=False))):
            rung = [
                n
                for n in graph
                if n.ok and not n.is_blend and n.op not in (Op.REFIT, Op.EDA, Op.RERUN)
                and node_rows(n, self.n_train) == size
            ]  # fmt: skip
            if len(rung) < min(self.factor, _COMPETITORS):
                continue
            best = sorted(rung, key=key, reverse=True)[: max(1, len(rung) // self.factor)]
            for node in best:
                expected = rows_scaled_seconds(node, bigger / size)
                if node.id in grown or expected > limit_s:
                    continue
                why = (
                    f"{node.id} is among the best {len(best)} of the {len(rung)} nodes trained on {size} rows: "
                    f"its script again on {bigger} rows (expected about {expected:.0f} s)"
                )
                return Action(Op.GROW, (node.id,), why, rows=None if bigger == self.n_train else bigger)
        return None


def sampled(proposal: Proposal, action: Action, n_train: int) -> Proposal:
    """``proposal`` with the rows its script trains on in its meta (``train_rows`` of
    ``train_rows_of``), when ``action`` gave it a sample; a grow's meta says whose script it runs."""
    meta = {k: v for k, v in proposal.meta.items() if k not in ("train_rows", "train_rows_of")}
    if action.rows:
        meta.update(train_rows=action.rows, train_rows_of=n_train)
    if action.op == Op.GROW:
        meta["grown_from"] = action.parents[0]
    return replace(proposal, meta=NodeMeta(**meta))  # type: ignore[typeddict-item]


def grow_proposal(parent: Node, code: str, action: Action) -> Proposal:
    """The script of ``parent``, unchanged, to run on the larger sample ``action`` gives it."""
    rows = f"{action.rows} rows" if action.rows else "every training row"
    had = parent.meta.get("train_rows")
    plan = (
        f"## {parent.id} on {rows}\n\nThe script of `{parent.id}`, unchanged, trained on {rows} instead of "
        f"{had}: {action.reason}.\n"
    )
    return Proposal(plan, code, NodeMeta(**parent.meta), title=f"{parent.title or parent.id}, on {rows}")


def sample_dir(run: RunDir, rows: int) -> Path:
    """The data folder of a sample of ``rows`` training rows (written on first use): the
    workspace's files, its training file cut to the first ``rows`` rows (or whole groups) of
    one seeded order. Safe from several workers' threads."""
    root = run.workspace.data_dir.parent / SAMPLES
    dest = root / str(rows)
    with _building:
        if dest.is_dir():
            return dest
        spec, data = run.spec, run.workspace.data_dir
        partial = root / f".{rows}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        train = data / spec.train_file
        for entry in data.iterdir():
            if entry not in (train, parquet_of(train)):
                _link_tree(entry, partial / entry.name)
        keep = sample_mask(train, rows, spec.group_key or spec.id_column)
        written = [partial / spec.train_file]
        write_rows(train, keep, written[0])
        if parquet_of(train).exists():  # a large table's typed copy: the same rows
            written.append(parquet_of(written[0]))
            write_rows_parquet(parquet_of(train), keep, written[1])
        for path in written:  # read-only as the workspace's files (the links share their modes)
            path.chmod(0o444)
        partial.rename(dest)
    return dest


def remove_samples(run: RunDir) -> None:
    """Delete the row samples (the search is over: no refit reads them)."""
    shutil.rmtree(run.workspace.data_dir.parent / SAMPLES, ignore_errors=True)


def sample_mask(path: Path, rows: int, column: str) -> np.ndarray:
    """Which rows of the CSV ``path`` a sample of ``rows`` keeps: the first ``rows`` of one
    seeded random order, where rows sharing a value of ``column`` come and go together (a
    group's; on a table whose ``column`` is a unique id, single rows)."""
    return share_of_rows(read_csv_exact(path, usecols=[column])[column], rows)


def share_of_rows(keys: pd.Series, rows: int) -> np.ndarray:
    """Which of the rows ``keys`` names a sample of about ``rows`` keeps (see ``sample_mask``)."""
    codes, uniques = pd.factorize(keys)
    order = np.random.default_rng(_SEED).permutation(len(uniques))  # a place for every group
    sizes = np.bincount(codes, minlength=len(uniques))
    taken_before = np.cumsum(sizes[order]) - sizes[order]  # rows the groups ahead of each hold
    keep_group = np.zeros(len(uniques), dtype=bool)
    keep_group[order[taken_before < rows]] = True
    return keep_group[codes]


def _link_tree(source: Path, dest: Path) -> None:
    """``source`` (a file or a folder) at ``dest`` by hard links, copied where links fail
    (another file system)."""
    if source.is_dir():
        shutil.copytree(source, dest, copy_function=_link_or_copy)
    else:
        _link_or_copy(source, dest)


def _link_or_copy(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
