"""What a node will cost before it starts, and when the search ends because nothing fits.

A proposal's cost is estimated from this run's own measurements (never from constants that
depend on the machine): the seconds its model family took per unit of work on this run so
far (a unit: one fold of one seed on all training rows; a recipe's meta says its folds,
seeds and row cap), or, for a move that starts from its parent's script, the parent's
measured seconds scaled the same way. A family nothing has measured yet is estimated at
what every script costs besides fitting (``least_seconds``: reading the data and writing
the outputs, as measured on this run), so its draft is not started with less time than that.
A blend (it reads stored predictions and fits a few weights or a small stacker) costs about
what this run's fastest blend took (``fastest_blend``): a 5-minute schools run started one
with 1.3 s left, and the run's end killed it.

- A proposal whose estimate exceeds the time limit it would have is not started
  (``mlguild.run.gate.unaffordable``): it is recorded as a node with the status ``over_budget``, the estimate
  and its basis in its failure and timing (``estimate_s``), so the brain sees it and moves on.
- Near the end, when the brain's proposals keep exceeding the time left, or the last one did,
  no measured script fits and asking the brain again would cost time (a model's proposals),
  the search ends (``nothing_fits``): the final stage gets the time.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import BudgetExhausted
from ..core.graph import Node, SearchGraph
from ..core.protocols import Action, Proposal
from ..core.vocabulary import FailureKind, Op

# A library a script's model comes from, most specific first (a script imports sklearn for
# its folds whatever model it fits).
_FAMILIES = (
    ("sentence_transformers", "sentence_transformers"),
    ("torch", "torch"),
    ("catboost", "catboost"),
    ("xgboost", "xgboost"),
    ("lightgbm", "lightgbm"),
)
_IMPORT = r"^\s*(?:from|import)\s+{}\b"
_OVER_IN_A_ROW = 3  # proposals in a row over the time left near the end: the search ends
# A script's seconds vary from run to run (the page cache, the other worker's load, a fold
# that stops early or not): one whose estimate comes within a fifth of its time limit is about
# as likely to be killed at the limit as not, so it is started only with that much to spare.
ESTIMATE_MARGIN = 1.25
_ASKING_SHARE = 0.1  # the share of the time left that asking the brain again may cost
_NOT_MEASURED = (Op.REFIT, Op.EDA, Op.BLEND)


@dataclass(frozen=True)
class Estimate:
    """A script's expected seconds, and what they were estimated from (for the journal)."""

    seconds: float
    basis: str


def family(meta: Mapping[str, Any], code: str) -> str | None:
    """The model family of a script: its recipe (the recipe brain's meta), else the most
    specific model library it imports; None when neither says."""
    if meta.get("brain") == "recipes" and meta.get("recipe"):
        return f"recipe {meta['recipe']}"
    for name, module in _FAMILIES:
        if re.search(_IMPORT.format(module), code, re.MULTILINE):
            return name
    return None


def work_units(meta: Mapping[str, Any], n_train: int) -> float:
    """How much fitting a script does, in folds of one seed on all training rows (1 when its
    meta does not say): fewer on a row sample (``train_rows``, mlguild.run.samples) or under
    a recipe's row cap."""
    run = meta.get("run") if isinstance(meta.get("run"), Mapping) else {}
    assert isinstance(run, Mapping)
    folds, seeds = float(run.get("n_folds") or 1), float(run.get("seeds") or 1)
    read = float(meta.get("train_rows") or n_train)
    cap = run.get("max_train_rows")
    rows = min(1.0, min(read, float(cap) if cap else read) / n_train) if n_train else 1.0
    return max(folds * seeds * rows, 1e-9)


def _measured(node: Node) -> bool:
    """A node whose seconds say what its script costs: it ran to its end (scored, or failed
    after it), or was killed by its own limit (a lower bound), not by a limit the run's end cut."""
    exec_s = node.timing.get("exec_s") or 0.0
    return exec_s > 0 and node.op not in _NOT_MEASURED and not node.timing.get("cut_short") and node.code_sha256 != ""


def fastest_blend(graph: SearchGraph) -> Estimate | None:
    """The seconds of this run's fastest blend that ran to its end (or to its own limit; not one
    the run's end cut short), or None before any: another blend reads the same kind of stored
    predictions."""
    ran = [
        (n.timing["exec_s"], n.id)
        for n in graph
        if n.op == Op.BLEND and n.finished and (n.timing.get("exec_s") or 0.0) > 0 and not n.timing.get("cut_short")
    ]
    if not ran:
        return None
    seconds, node_id = min(ran)
    return Estimate(seconds, f"this run's fastest blend, {node_id}, ran {seconds:.1f} s")


def estimate(graph: SearchGraph, action: Action, proposal: Proposal, code_of: Any, n_train: int) -> Estimate | None:
    """The expected seconds of ``proposal``'s script for ``action`` (see the module
    docstring), or None when nothing on this run measured anything like it. ``code_of``:
    a node's script (to tell the family of a node the recipes did not write)."""
    units = work_units(proposal.meta, n_train)
    parents = [graph.nodes[p] for p in action.parents if p in graph.nodes]
    if action.op in (Op.IMPROVE, Op.RERUN, Op.GROW) or (action.op == Op.DEBUG and parents and parents[0].ok):
        parent = parents[0] if parents else None
        if parent is None or not _measured(parent):
            return None
        scale = units / work_units(parent.meta, n_train)
        seconds = parent.timing["exec_s"] * scale
        return Estimate(seconds, f"its parent {parent.id} ran {parent.timing['exec_s']:.0f} s, x{scale:.2g} the work")
    if action.op == Op.BLEND:
        return fastest_blend(graph)
    if action.op not in (Op.DRAFT, Op.EVOLVE):
        return None  # a fuse or a repair may cost anything
    mine = family(proposal.meta, proposal.code)
    if mine is None:
        return None
    rates = [
        n.timing["exec_s"] / work_units(n.meta, n_train)
        for n in graph
        if _measured(n) and family(n.meta, code_of(n)) == mine
    ]
    if not rates:
        return None
    rate = statistics.median(rates)
    return Estimate(rate * units, f"{mine}: {rate:.1f} s per fold on this run ({len(rates)} measured), {units:g} folds")


def least_seconds(graph: SearchGraph) -> Estimate | None:
    """What any script on this run costs at least, for a draft nothing has measured the like
    of: the fewest seconds a measured script spent besides fitting (reading the data,
    building features, predicting and writing, which every script does), among the scripts
    that say their fitting seconds (``fit_s``: the recipes do); None when none says."""
    spent = [
        (n.timing["exec_s"] - n.timing["fit_s"], n.id)
        for n in graph
        if _measured(n) and n.ok and n.timing.get("fit_s") is not None
    ]
    if not spent:
        return None
    seconds, node_id = min(spent)
    return Estimate(seconds, f"nothing like it measured yet; {node_id} spent {seconds:.0f} s besides fitting")


def nothing_fits(graph: SearchGraph, limit: float, full_limit: float) -> None:
    """Raise BudgetExhausted("time") when, with the run's end near (``limit`` below the
    ``full_limit`` scripts had), the brain's proposals cannot finish in the time left: the
    last one could not and no measured script is that fast, or the last few in a row could not."""
    if limit >= full_limit:
        return
    search = [n for n in graph if n.op not in (Op.REFIT, Op.EDA) and n.finished]
    if not search or search[-1].status != FailureKind.OVER_BUDGET:
        return
    in_a_row = len(search) >= _OVER_IN_A_ROW and all(
        n.status == FailureKind.OVER_BUDGET for n in search[-_OVER_IN_A_ROW:]
    )
    if in_a_row:
        raise BudgetExhausted("time")
    fastest = min((n.timing["exec_s"] for n in search if n.ok and _measured(n)), default=None)
    # Nothing measured is that fast: another proposal may still be (a cheaper family, fewer
    # folds, a blend), and asking again is worth it while it costs little of the time left
    # (the recipes answer in milliseconds; a model's proposals take seconds each).
    asking_s = float(search[-1].timing.get("brain_s") or 0.0)
    if (fastest is None or fastest * ESTIMATE_MARGIN > limit) and asking_s * (
        _OVER_IN_A_ROW - 1
    ) > _ASKING_SHARE * limit:
        raise BudgetExhausted("time")
