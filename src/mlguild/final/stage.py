"""The final stage: choosing the submission a run ends with, then grading it once.

When the search ends by its budget, ``finish`` (the one call that finishes a run, for the
library entry ``mlguild.launch.start`` and for any code that drives a session itself):

1. picks the base node (``mlguild.final.base.final_base``): the best node on the holdout, unless the best
   blend is within noise of it;
2. refits the base on every labelled row (``mlguild.run.refit``), as separate ``refit`` nodes,
   in the time the search kept back (``mlguild.run.reserve``): for a blend, each member it
   used (every one for a stack), then the blend. When the base's refit, as this run measured it, cannot finish in
   the time left (``mlguild.final.refit_plan``), the best node within noise of it whose refit can is refitted instead, and
   ``final.json`` says which and why (``refit_fallback``); a blend that weights one member
   alone is refitted as that member, and a script whose fits stop at their deadline is
   refitted on every row though estimated at up to ``DEADLINE_SLACK`` times the time left
   (``finishing_seconds``);
3. uses the refit only if it wrote a valid submission that agrees with the base node's
   (a refit cannot be scored: its holdout is training data); otherwise the base node;
4. writes ``final/`` (submission, solution, ``final.json`` saying why) and journals
   ``final_chosen``;
5. grades that submission once on the sealed test answers (``mlguild.final.grade``).

A run stopped by Ctrl-C is not finished: it can be resumed and find a better node, so
nothing is chosen or graded. A resume that finds a new best node runs the stage again.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import StopRun, SubmissionError
from ..core.graph import Node
from ..core.meta import NodeMeta
from ..core.protocols import Proposal
from ..core.vocabulary import Op, Status
from ..run.budget import Stop
from ..run.node import finish_node, run_node
from ..run.refit import (
    after_folds_seconds,
    agreement,
    build_full_data,
    fold_share,
    growth,
    is_paced,
    node_refit_seconds,
    one_model,
    refit_budget,
    refit_chain,
)
from ..run.reserve import harness_seconds
from ..run.samples import remove_samples
from ..run.session import Session
from ..rundir import events
from ..rundir.folder import RunDir
from ..util.exact_csv import read_csv_exact
from ..util.fs import atomic_write, read_no_follow, sha256_bytes
from .base import bootstrap_wins, final_base
from .confirm import confirm_after_search, selection_bias, skipped_reason
from .grade import grade_once
from .ladder import ladder
from .refit_plan import plan_refit

_MIN_REFIT_S = 5.0  # below this much time left, a refit cannot do useful work


@dataclass(frozen=True)
class Finish:
    """What finishing a run produced: the final choice (``final/final.json``) and the
    once-only grade, each None when there was none."""

    choice: dict | None
    grade: dict | None


def finish(session: Session, stop: Stop) -> Finish:
    """Finish a run whose loop stopped with ``stop``: when it ended by its budget and has a
    best node, choose the final submission (refitted when there is time and
    ``final.refit``) unless it is already chosen for this best node, then grade it once
    (``final.grade_test``). A run that did not end by its budget is left as it is."""
    state, config = session.state, session.run.config
    if not stop.finished or state.best_id is None:
        return Finish(state.final_choice, state.final_grade)
    choice = state.final_choice
    if choice is None or choice["best"] != state.best_id:  # again after a resume that found a better node
        confirm_after_search(session)  # once, before any refit trains on those rows
        stage = FinalStage(session)
        if config.final.refit:
            # The refit trains on more rows than any search script, so the per-script limit does
            # not bound it: with a time budget it may take what is left (the grade comes after it,
            # and takes the harness's time per node); a ten-million-row run once refitted on a
            # fifth of its rows with 650 s left because it was given 300 s.
            remaining = session.clock.remaining_s()
            timeout = config.sandbox.script_timeout_s * growth(session.run)
            if remaining is not None:
                timeout = remaining - (harness_seconds(state.graph) if config.final.grade_test else 0.0)
            try:
                choice = stage.run_refit(timeout)
            except StopRun:
                raise
            except Exception as exc:  # a shape the refit cannot handle must not cost the run its final stage
                why = f"the refit could not be made for this task ({type(exc).__name__}: {str(exc)[:200]})"
                session.on_event("warning", {"message": f"{why}; the final submission is the base node's"})
                choice = stage.choose_without_refit(why)
        else:
            choice = stage.choose_without_refit("the final refit is off (final.refit=false)")
    grade = grade_once(session.run, state, session.scorers.grade) if config.final.grade_test else None
    return Finish(choice, grade)


def final_dir(run: RunDir) -> Path:
    return run.path / "final"


class FinalStage:
    """Runs the refit chain of the final base node and records the final choice."""

    def __init__(self, session: Session):
        self.session = session
        self.run, self.state, self.scorers = session.run, session.state, session.scorers
        self.held = session.executor.held
        self.base_reason = ""
        self.fallback: dict[str, Any] | None = None  # the base could not be refitted in time: what was instead
        self.refit_on = "all labelled rows"  # what the refit trained on, in words (fewer when time was short)

    def _best_node(self) -> Node:
        """The best node of the search (``finish`` runs the final stage only when there is one)."""
        if self.state.best_id is None:
            raise ValueError("the final stage needs a best node")
        return self.state.graph[self.state.best_id]

    def choose_without_refit(self, reason: str) -> dict:
        base, why = final_base(
            self.run, self.state.graph, self.scorers.holdout, self._best_node(), self.state.confirmation, self.held
        )
        return self._choose(base, None, f"{why}; {reason}")

    def run_refit(self, timeout_s: float) -> dict:
        """Refit the final base node (``final_base``) within ``timeout_s`` and choose the
        final submission: the refit if it is sound, else the base node itself."""
        graph = self.state.graph
        best, why = final_base(
            self.run, graph, self.scorers.holdout, self._best_node(), self.state.confirmation, self.held
        )
        scales = self.session.clock.scales  # what refits of each family measured
        scale_of = scales.of(self.run, graph)
        plan = plan_refit(self.run, graph, best, why, timeout_s, scales, self._within_noise)
        self.base_reason, self.fallback, self.refit_on = plan.reason, plan.fallback, plan.refit_on
        if plan.node is None:
            return self._choose(plan.base, None, plan.short)
        if plan.fallback is not None:
            self.session.on_event(
                "warning", {"message": f"final stage: {plan.short}; refitting {plan.node.id} instead"}
            )
        best, grow, window, needed = plan.node, plan.grow, plan.window, plan.needed_s
        deadline = time.monotonic() + timeout_s
        remove_samples(self.run)  # the search is over: its row samples are no longer read
        data = build_full_data(self.run, rows=window)
        try:
            refitted: dict[str, Node] = {}
            chain = refit_chain(graph, best, self.run)
            alone = len(chain) == 1  # a script by itself, not a blend's member: one model may do (one_model)
            harness = harness_seconds(graph)
            for i, original in enumerate(chain):
                left = deadline - time.monotonic()
                # A blend's own rerun takes a second or two: 4 s left still make it, not throw
                # its members' refits away.
                if left < min(_MIN_REFIT_S, node_refit_seconds(original, grow, scale_of(original), alone)):
                    return self._chain_cut(best, refitted, f"no time left to refit {original.id}", needed, timeout_s)
                budget = refit_budget(original, grow, left)
                # Its folds may run until it must predict and write and the refits after it must
                # start, each with a margin (``after_folds_seconds``), not only half its limit (not
                # a paced script's: it would spend all of that, not what it was priced at).
                rest = after_folds_seconds(original, chain[i + 1 :], grow, scale_of, alone, harness)
                share = None if is_paced(original) else fold_share(left, rest, budget)
                node = self._refit_node(original, refitted, data, budget, grow, alone and one_model(original), share)
                if node.status != Status.FINAL_OK:
                    last = ((node.failure or "").strip().splitlines() or ["no message"])[-1]
                    why = f"the refit of {original.id} failed ({node.status}): {last[:200]}"
                    return self._chain_cut(best, refitted, why, needed, timeout_s)
                refitted[original.id] = node
            return self._check_and_choose(best, refitted[best.id])
        finally:
            shutil.rmtree(data, ignore_errors=True)  # the labels it holds are sealed again

    def _chain_cut(self, base: Node, refitted: dict[str, Node], why: str, needed: float, left: float) -> dict:
        """A blend's refit that stopped part-way (``why``: out of time, or a member's refit
        failed): its best member already refitted, when within noise of ``base``, rather than
        ``base`` trained on the search's rows (the members' refits are not thrown away)."""
        graph = self.state.graph
        for member in (n for n in graph.ranked() if n.id in refitted and n.id != base.id):
            if self._within_noise(base, member):
                refit = refitted[member.id]
                self.fallback = {"wanted": base.id, "needed_s": round(needed, 1), "left_s": round(left, 1)}
                self.fallback.update(refitted=member.id, refit_s=round(refit.timing.get("exec_s") or 0.0, 1))
                self.base_reason += f"; {why}, so the final is {member.id}'s refit, a member within noise of {base.id}"
                self.session.on_event("warning", {"message": f"final stage: {why}; using the refit of {member.id}"})
                return self._check_and_choose(member, refit)
        return self._choose(base, None, why)

    def _within_noise(self, base: Node, other: Node) -> bool:
        """Whether ``other`` may stand in for ``base``'s refit: ``base`` beats it on fewer than
        ``final.tie_share`` of paired bootstrap resamples of the holdout (a model refitted on
        every row gains less than a clearly better model is ahead by)."""
        wins = bootstrap_wins(self.run, self.scorers.holdout, base, other, self.held)
        return wins is not None and wins < self.run.config.final.tie_share

    def _refit_node(
        self,
        original: Node,
        refitted: dict[str, Node],
        data: Path,
        timeout_s: float,
        grow: float,
        single: bool,
        share: float | None = None,
    ) -> Node:
        """Refit ``original``'s script on ``data``; ``single``: as one model on every row
        (MLGUILD_REFIT, for a script that fits ``one_model`` refitted by itself); ``share``: of
        its time limit its folds may use (MLGUILD_FOLD_SHARE, ``fold_share``)."""
        graph = self.state.graph
        code = read_no_follow(self.run.node_dir(original.id) / "solution.py").decode()
        meta: NodeMeta = {
            "refit_of": original.id,
            "data": "train + holdout (all labelled rows)" if grow == growth(self.run) else self.refit_on,
            "refit_growth": round(grow, 6),  # what its time is measured against (mlguild.run.reserve)
        }
        if single:
            meta["one_model"] = True
        if share is not None:
            meta["fold_share"] = share
        stage: dict[str, str] = {}
        if original.is_blend:  # blend the refitted members, staged under their original names
            stage = meta["stage"] = {p: refitted[p].id for p in original.parents if p in refitted}
        node = Node(id=graph.next_id(), op=Op.REFIT, parents=(original.id, *stage.values()), iteration=len(graph))
        graph.add(node)
        plan = (
            f"## Refit of {original.id} on all labelled rows\n\nThe script of `{original.id}`, "
            "unchanged, trained on train + holdout for the final submission"
            + (" as one model on every row (MLGUILD_REFIT=1), not one per fold.\n" if single else ".\n")
        )
        seed = self.run.config.brain.seed
        outcome = run_node(
            self.session, node, Proposal(plan, code, meta), reason="final refit", timeout_s=timeout_s, seed=seed,
            data_dir=data,
        )  # fmt: skip
        with self.session.lock:
            finish_node(self.session, node, outcome)
        return node

    def _check_and_choose(self, best: Node, refit: Node) -> dict:
        spec = self.run.spec
        reference = read_csv_exact(self.run.node_dir(best.id) / "output" / "submission.csv")
        candidate = read_csv_exact(self.run.node_dir(refit.id) / "output" / "submission.csv")
        kind = self.scorers.holdout.metric.prediction
        score = agreement(kind, reference, candidate, spec.id_column, spec.key_columns, spec.group_column)
        # Ranked lists, and models of data ordered in time (a refit sees the latest rows, the
        # search's never did), honestly differ from the node they refit: two sound fits of one
        # list script share far fewer items than 0.8, so agreement would refuse them. There a
        # refit is judged by the metric instead: on the holdout rows it must be no worse than
        # the base node beyond noise (a broken refit is far worse; a sound one, having trained
        # on those rows or on the rows just before them, is as good or better).
        if kind == "ranked_list" or spec.time_column:
            wins = self._holdout_wins(best, refit)
            if wins is not None:
                needed_share, why = (
                    self.run.config.final.tie_share,
                    "ranked lists" if kind == "ranked_list" else "rows ordered in time",
                )
                versus = f"{best.id} is better on {wins:.0%} of bootstrap resamples of the holdout rows"
                if wins >= needed_share:
                    return self._choose(
                        best, None, f"the refit {refit.id} scores worse than {best.id} on the holdout rows beyond noise "
                        f"({versus}, {needed_share:.0%} or more)", score,
                    )  # fmt: skip
                return self._choose(
                    best, refit, f"refit on {self.refit_on}; within noise of {best.id} on the holdout rows or better "
                    f"({versus}; for {why} the refit is judged by its metric, test-prediction agreement {score:.3f})",
                    score,
                )  # fmt: skip
        needed = self.run.config.final.refit_min_agreement
        if score < needed:
            return self._choose(
                best,
                None,
                # rounded down, so a share just short of the bar never reads as meeting it
                f"the refit {refit.id} agrees with {best.id} on only {math.floor(score * 1000) / 1000:.3f} "
                f"of the test predictions (at least {needed} needed)",
                score,
            )
        return self._choose(best, refit, f"refit on {self.refit_on}; agreement with {best.id}: {score:.3f}", score)

    def _holdout_wins(self, best: Node, refit: Node) -> float | None:
        """The share of bootstrap resamples of the holdout rows on which the base node scores
        better than its refit, scored by the harness on the sealed holdout answers (only the
        holdout part of files that also predict the confirmation rows); None when the refit
        wrote no holdout predictions the scorer can read."""
        files = [self.run.node_dir(n.id) / "output" / "holdout.csv" for n in (best, refit)]
        if not all(f.is_file() and not f.is_symlink() for f in files):
            return None
        with ExitStack() as parts:
            if self.held is not None:
                files = [parts.enter_context(self.held.parts(f))[0] for f in files]
            try:
                return self.scorers.holdout.bootstrap_wins(files[0], files[1], seed=self.run.config.brain.seed)
            except (SubmissionError, ValueError):
                return None

    def _choose(self, best: Node, refit: Node | None, reason: str, agreement_score: float | None = None) -> dict:
        if refit is None and self.fallback is not None:  # the stand-in's refit failed: the base's own submission
            best = self.state.graph[self.fallback["wanted"]]
        chosen = refit or best
        source = self.run.node_dir(chosen.id) / "output" / "submission.csv"
        out = final_dir(self.run)
        out.mkdir(exist_ok=True)
        atomic_write(out / "submission.csv", read_no_follow(source))
        atomic_write(out / "solution.py", read_no_follow(self.run.node_dir(chosen.id) / "solution.py"))
        reason = f"{self.base_reason}; {reason}" if self.base_reason else reason
        record: dict[str, Any] = {
            "node": chosen.id,
            "base": best.id,
            "best": self.state.best_id,
            "refit": refit is not None,
            "reason": reason,
            "agreement": None if agreement_score is None else round(agreement_score, 6),
            **({"refit_fallback": self.fallback} if self.fallback else {}),
            "submission_sha256": sha256_bytes(read_no_follow(out / "submission.csv")),
        }
        # The holdout score of the choice beside its confirmation score (mlguild.final.confirm).
        bias = selection_bias(self.state.confirmation, best.id, self.scorers.holdout.metric.direction)
        record["confirmation"] = bias or {"skipped": skipped_reason(self.session) or "not scored"}
        record["ladder"] = ladder(  # where the choice stands between the floor and the ceiling
            self.run.journal.records, self.state.graph, self.state.best_id, record,
            self.scorers.holdout.metric.name, self.run.config.final.reference_score,
        )  # fmt: skip
        atomic_write(out / "final.json", json.dumps(record, indent=2))
        events.final_chosen(self.run.journal, record, self.session.clock.elapsed())
        self.state.final_choice = record
        return record
