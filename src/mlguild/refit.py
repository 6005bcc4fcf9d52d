"""The final refit: the best pipeline retrained on every labelled row (train + holdout).

The search needs a holdout the scripts never see; the final submission does not, and a
model that learns from all labelled rows is usually better. So, once the search has ended,
the best node's script runs again, unchanged, on a data directory whose training file also
holds the holdout rows with their labels. When the best node is a fuse, each member is
refitted first and the blend runs again on the refitted members' predictions.

Each rerun is a separate ``refit`` node in the graph and the journal. Nothing can score it
(its holdout is now in its training data), so it is checked instead: it must write a valid
submission, and its test predictions must agree with those of the node it refits (rank
correlation, or the share of equal labels) — a refit that broke silently is never chosen.
The choice is journaled as ``final_chosen`` and written to ``final/``; the fallback is
always the verified best node.

The full-data directory holds sealed labels, so it exists only while refit nodes run, is
forbidden to the guard of every other node, and is deleted afterwards.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from pathlib import Path

import pandas as pd

from .errors import RunError
from .executor import FINAL_OK, REFIT, NodeRunner, Outcome, read_no_follow, sha256_text
from .firewall import read_csv_exact
from .fsutil import atomic_write
from .rundir import RunDir
from .scorer import bootstrap_wins
from .search.graph import Node, SearchGraph
from .state import RunState

_SAFETY = 1.25  # reserve this much more than the measured run times
_PACED = 0.5  # a script that used this share of its time budget is paced by it
_MAX_RESERVE = 0.3  # the search keeps back at most this share of the budget for a refit


def final_dir(run: RunDir) -> Path:
    return run.path / "final"


def full_data_dir(run_path: Path) -> Path:
    return run_path / "final" / "data"


def refit_chain(graph: SearchGraph, node: Node, run: RunDir | None = None) -> list[Node]:
    """The nodes whose scripts a refit of ``node`` reruns, members before their blend; with
    ``run``, only the members the blend gave weight to."""
    if node.op != "fuse":
        return [node]
    members = [p for p in node.parents if p in graph.nodes]
    weights = _blend_weights(run, node) if run is not None else {}
    if weights:
        members = [m for m in members if weights.get(m, 0) > 0]
    return [graph[m] for m in members] + [node]


def _blend_weights(run: RunDir, node: Node) -> dict[str, float]:
    path = run.node_dir(node.id) / "output" / "fuse_weights.json"
    try:
        return {str(k): float(v) for k, v in json.loads(read_no_follow(path)).get("weights", {}).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def growth(run: RunDir) -> float:
    """How much larger the training file of the refit is than the search's."""
    split = run.workspace.manifest().get("split", {})
    train, holdout = split.get("train_rows") or 1, split.get("holdout_rows") or 0
    return (train + holdout) / train


def node_refit_seconds(node: Node, grow: float) -> float:
    """How long the refit of one node needs. A script that ran far inside its time budget
    needs its measured time, scaled to the larger file; one that used most of its budget is
    paced by it (it sizes its own work to MLGUILD_TIME_BUDGET), so its refit gets as much
    budget per row, or it would train less than the node it replaces."""
    if is_paced(node):
        return grow * node.timing["budget_s"]
    return grow * node.timing.get("exec_s", 0.0) * _SAFETY


def is_paced(node: Node) -> bool:
    budget_s = node.timing.get("budget_s", 0.0)
    return bool(budget_s) and node.timing.get("exec_s", 0.0) >= _PACED * budget_s


def refit_seconds(run: RunDir, graph: SearchGraph, node: Node | None) -> float:
    """Time the refit of ``node`` (its whole chain) needs, or 0 when refits are off."""
    if node is None or not run.config.final.refit:
        return 0.0
    grow = growth(run)
    return sum(node_refit_seconds(n, grow) for n in refit_chain(graph, node, run))


def best_blend(graph: SearchGraph) -> Node | None:
    return next((n for n in graph.ranked() if n.op == "fuse"), None)


def final_base(run: RunDir, graph: SearchGraph, runner: NodeRunner, best: Node) -> tuple[Node, str]:
    """The node the final submission comes from: the best on the holdout, unless the best
    blend is within noise of it. A holdout of a few hundred rows cannot tell apart scores
    that differ by less than their noise, and picking the maximum of many such scores
    favours luck; a blend of several models is the more reliable choice on such a tie.
    "Within noise": the best node beats the blend on fewer than ``final.tie_share`` of
    paired bootstrap resamples of the holdout rows (scored by the harness, outside the sandbox)."""
    blend = best_blend(graph)
    if blend is None or blend.id == best.id:
        return best, f"the best node on the holdout ({best.id})"
    spec = run.spec
    wins = bootstrap_wins(
        run.node_dir(best.id) / "output" / "holdout.csv",
        run.node_dir(blend.id) / "output" / "holdout.csv",
        runner.holdout_answers,
        runner.fmt,
        runner.metric,
        spec.target_columns,
        spec.metric_params,
        spec.positive_label,
        spec.classes,
        seed=run.config.brain.seed,
    )
    needed = run.config.final.tie_share
    if wins is not None and wins < needed:
        return blend, (
            f"the blend {blend.id} is within noise of the best node {best.id} on the holdout "
            f"({best.id} is better on {wins:.0%} of bootstrap resamples, under {needed:.0%})"
        )
    share = "" if wins is None else f" on {wins:.0%} of bootstrap resamples"
    return best, f"the best node on the holdout ({best.id}, better than the best blend {blend.id}{share})"


def refit_reserve(run: RunDir, graph: SearchGraph, node: Node | None) -> float:
    """Time the search keeps back for the refit of ``node`` (or of the best blend, which the
    final stage may choose instead): what it needs, unless that is more than a fair share of
    the budget (then no refit is planned and the search goes on)."""
    needed = max(refit_seconds(run, graph, node), refit_seconds(run, graph, best_blend(graph)))
    budget = run.config.budget.time_s
    return needed if budget is None or needed <= _MAX_RESERVE * budget else 0.0


def build_full_data(run: RunDir) -> Path:
    """A copy of the workspace data whose training file also holds the holdout rows and labels."""
    spec, ws = run.spec, run.workspace
    dest = full_data_dir(run.path)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(ws.data_dir, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    train = read_csv_exact(ws.data_dir / spec.train_file)
    inputs = read_csv_exact(ws.data_dir / "holdout.csv")
    answers = read_csv_exact(ws.holdout_answers)
    # The firewall wrote the holdout inputs and their answers from the same rows in the same
    # order, so they join by position (which also holds where ids repeat).
    if inputs[spec.id_column].tolist() != answers[spec.id_column].tolist():
        raise RunError(
            "the holdout inputs and their sealed answers no longer list the same ids in the same order",
            "the run directory was changed by hand; start a new run",
        )
    labelled = inputs.assign(**{c: answers[c].to_numpy() for c in spec.target_columns})
    full = pd.concat([train, labelled[train.columns]], ignore_index=True)
    target = dest / spec.train_file
    target.unlink()
    full.to_csv(target, index=False)
    return dest


def agreement(kind: str, reference: pd.DataFrame, refit: pd.DataFrame, id_column: str) -> float:
    """How much two submissions for the same rows agree: Spearman correlation of the values
    (probabilities, regression values; per column, the lowest), or the share of rows with
    the same label (labels; the most probable class for probability matrices)."""
    a = reference.set_index(id_column)
    b = refit.set_index(id_column).loc[a.index]
    if kind == "label":
        return float((a.iloc[:, 0].astype(str) == b.iloc[:, 0].astype(str)).mean())
    a, b = a.apply(pd.to_numeric, errors="coerce"), b.apply(pd.to_numeric, errors="coerce")
    if kind == "class_probabilities":
        return float((a.to_numpy().argmax(axis=1) == b.to_numpy().argmax(axis=1)).mean())
    # A constant column has no rank correlation: it agrees with nothing.
    correlations = [
        a[c].corr(b[c], method="spearman") if a[c].nunique() > 1 and b[c].nunique() > 1 else 0.0 for c in a.columns
    ]
    return min((0.0 if math.isnan(c) else float(c)) for c in correlations)


class Refitter:
    """Runs the refit chain of the best node and records the final choice."""

    def __init__(self, run: RunDir, state: RunState, runner: NodeRunner, elapsed):
        self.run, self.state, self.runner = run, state, runner
        self.elapsed = elapsed  # the agent's session clock, for journal records
        self.base_reason = ""

    def choose_without_refit(self, reason: str) -> dict:
        base, why = final_base(self.run, self.state.graph, self.runner, self.state.graph[self.state.best_id])
        return self._choose(base, None, f"{why}; {reason}")

    def run_refit(self, timeout_s: float) -> dict:
        """Refit the final base node (``final_base``) within ``timeout_s`` and choose the
        final submission: the refit if it is sound, else the base node itself."""
        graph = self.state.graph
        best, why = final_base(self.run, graph, self.runner, graph[self.state.best_id])
        self.base_reason = why
        needed = refit_seconds(self.run, graph, best)
        if needed > timeout_s:
            return self._choose(
                best,
                None,
                f"not enough time left to refit {best.id} as long as the search ran it "
                f"(needs about {needed:.0f} s, {timeout_s:.0f} s left)",
            )
        deadline = time.monotonic() + timeout_s
        grow = growth(self.run)
        data = build_full_data(self.run)
        try:
            refitted: dict[str, Node] = {}
            for original in refit_chain(graph, best, self.run):
                left = deadline - time.monotonic()
                if left < 5:
                    return self._choose(best, None, f"no time left to refit {original.id}")
                # A paced script gets the budget it sized its work to (scaled); others all that is left.
                budget = min(left, node_refit_seconds(original, grow)) if is_paced(original) else left
                node = self._refit_node(original, refitted, data, budget)
                if node.status != FINAL_OK:
                    last = ((node.failure or "").strip().splitlines() or ["no message"])[-1]
                    return self._choose(best, None, f"the refit of {original.id} failed ({node.status}): {last[:200]}")
                refitted[original.id] = node
            return self._check_and_choose(best, refitted[best.id])
        finally:
            shutil.rmtree(data, ignore_errors=True)  # the labels it holds are sealed again

    def _refit_node(self, original: Node, refitted: dict[str, Node], data: Path, timeout_s: float) -> Node:
        graph = self.state.graph
        code = read_no_follow(self.run.node_dir(original.id) / "solution.py").decode()
        meta = {"refit_of": original.id, "data": "train + holdout (all labelled rows)"}
        if original.op == "fuse":  # blend the refitted members, staged under their original names
            meta["stage"] = {p: refitted[p].id for p in original.parents if p in refitted}
        node = Node(
            id=graph.next_id(),
            op=REFIT,
            parents=(original.id, *(meta.get("stage") or {}).values()),
            iteration=len(graph),
            meta=meta,
            plan=f"## Refit of {original.id} on all labelled rows\n\nThe script of `{original.id}`, "
            "unchanged, trained on train + holdout for the final submission.\n",
        )
        graph.add(node)
        self.runner.write_proposal(node, node.plan, code, meta)
        node.attempts, node.code_sha256 = 1, sha256_text(code)
        self.run.journal.append(
            "node_started",
            node={
                "id": node.id,
                "op": node.op,
                "parents": list(node.parents),
                "iteration": node.iteration,
                "plan": node.plan,
                "meta": meta,
                "code_sha256": node.code_sha256,
                "reason": "final refit",
            },
            session_elapsed_s=round(self.elapsed(), 3),
        )
        outcome: Outcome = self.runner.execute(node, timeout_s, seed=self.run.config.brain.seed, data_dir=data)
        node.status, node.failure, node.timing = outcome.status, outcome.failure, outcome.timing
        node.outputs = outcome.outputs
        self.runner.write_report(node, outcome, self.state.graph)
        self.run.journal.append(
            "node_finished",
            id=node.id,
            status=node.status,
            score=None,
            failure=(node.failure or "")[-2000:] or None,
            outputs=node.outputs,
            timing=outcome.timing,
            exec=outcome.exec,
            session_elapsed_s=round(self.elapsed(), 3),
        )
        return node

    def _check_and_choose(self, best: Node, refit: Node) -> dict:
        spec = self.run.spec
        reference = read_csv_exact(self.run.node_dir(best.id) / "output" / "submission.csv")
        candidate = read_csv_exact(self.run.node_dir(refit.id) / "output" / "submission.csv")
        kind = self.runner.metric.prediction
        score = agreement(kind, reference, candidate, spec.id_column)
        needed = self.run.config.final.refit_min_agreement
        if score < needed:
            return self._choose(
                best,
                None,
                f"the refit {refit.id} agrees with {best.id} on only {score:.3f} "
                f"of the test predictions (at least {needed} needed)",
                score,
            )
        return self._choose(best, refit, f"refit on all labelled rows; agreement with {best.id}: {score:.3f}", score)

    def _choose(self, best: Node, refit: Node | None, reason: str, agreement_score: float | None = None) -> dict:
        chosen = refit or best
        source = self.run.node_dir(chosen.id) / "output" / "submission.csv"
        out = final_dir(self.run)
        out.mkdir(exist_ok=True)
        atomic_write(out / "submission.csv", read_no_follow(source))
        atomic_write(out / "solution.py", read_no_follow(self.run.node_dir(chosen.id) / "solution.py"))
        reason = f"{self.base_reason}; {reason}" if self.base_reason else reason
        record = {
            "node": chosen.id,
            "base": best.id,
            "best": self.state.best_id,
            "refit": refit is not None,
            "reason": reason,
            "agreement": None if agreement_score is None else round(agreement_score, 6),
            "submission_sha256": hashlib.sha256(read_no_follow(out / "submission.csv")).hexdigest(),
        }
        atomic_write(out / "final.json", json.dumps(record, indent=2))
        self.run.journal.append("final_chosen", **record, session_elapsed_s=round(self.elapsed(), 3))
        self.state.final_choice = record
        return record
