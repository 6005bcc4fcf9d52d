"""Executing one node: guard, sandboxed run, validation and sealed scoring, node files.

The holdout score is computed here, outside the sandbox, from ``output/holdout.csv`` and the
sealed labels. A number the script prints is recorded as ``printed_score`` and never used.
The scorer's own files are checked before and after every script, whatever it did, so a
script that rewrites them is the node that answers for it (status ``scorer_tampered``).
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import time
from pathlib import Path

from ..core.errors import ScorerIntegrityError, SubmissionError
from ..core.graph import Node, SearchGraph
from ..core.meta import NodeMeta
from ..core.protocols import Sandbox
from ..core.vocabulary import FailureKind, Op, Status
from ..firewall.guard import check_code
from ..firewall.workspace import sealed_paths
from ..rundir.folder import RunDir
from ..rundir.records import Outcome
from ..sandbox import ExecStatus, backbones, devices, safe_env
from ..scoring.flags import LEAKY_CV, describe, result_flags
from ..scoring.held_rows import HeldRows
from ..scoring.integrity import check_fingerprint
from ..scoring.oof import OofScorer, leaky_cv, pooled
from ..scoring.scorer import RunScorers
from ..util.fs import atomic_write, read_no_follow
from .embeddings_cache import EMBEDDINGS, EMBEDDINGS_ENV, keep_embeddings
from .fit_record import fit_record
from .node_report import result_lines
from .workers import current_worker

# "cv_score: 0.84" or "validation auc = 0.84  (5 folds)": a name, then the first number.
_PRINTED = re.compile(
    r"(?im)^\s*(?:cv|val|valid|validation|oof)[\w ]*?[:=]\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])"
)
OUTPUT_TAIL = 3000  # characters of a script's output a failure message, a report or a brain sees
PARENT_OUTPUTS = "parents"  # where a fuse node finds its parents' predictions
# Optional class probabilities behind label predictions, which a blend averages when present.
PROBA_FILES = ("proba_oof.csv", "proba_holdout.csv", "proba_submission.csv")


def parse_printed_score(stdout: str) -> float | None:
    """The last 'cv_score: X'-style number a script printed (for the record only)."""
    matches = _PRINTED.findall(stdout)
    try:
        return float(matches[-1]) if matches else None
    except ValueError:
        return None


class Executor:
    """Runs nodes' scripts for one run in its sandbox, and judges them with its scorers (built once)."""

    def __init__(self, run: RunDir, sandbox: Sandbox, scorers: RunScorers):
        self.run = run
        self.sandbox = sandbox
        self.scorers = scorers
        self.scorer_fingerprint = scorers.fingerprint
        self.metric = scorers.holdout.metric
        self.forbidden = [p.resolve() for p in sealed_paths(run.path)]
        self.oof_scorer = OofScorer(run.spec, run.workspace.data_dir / run.spec.train_file)
        ws, options = run.workspace, {"fingerprint": scorers.fingerprint, "max_bytes": scorers.holdout.format.max_bytes}
        self.held = HeldRows(run.spec, ws.data_dir, ws.sealed_dir, scorers.holdout, **options)

    def write_proposal(self, node: Node, plan: str, code: str, meta: NodeMeta) -> Path:
        node_dir = self.run.node_dir(node.id)
        node_dir.mkdir(parents=True, exist_ok=True)
        (node_dir / "plan.md").write_text(plan.strip() + "\n")
        (node_dir / "solution.py").write_text(code)
        (node_dir / "meta.json").write_text(json.dumps(meta, indent=2, default=str))
        return node_dir

    def execute(
        self,
        node: Node,
        timeout_s: float,
        seed: int,
        data_dir: Path | None = None,
        cpus: tuple[int, ...] | None = None,
        score: bool = True,
    ) -> Outcome:
        """Guard, run and score the node whose files are already written. A refit node runs on
        ``data_dir`` (all labelled rows) and is validated, not scored. ``score`` False (a step
        of a refine loop): outputs that meet the contract end as ``checked``, scored by nobody.

        Raises ScorerIntegrityError when the scorer's files differ from the run's fingerprint
        before the script runs (changed outside any node); when they differ after it, whatever
        its status, this node changed them and its outcome is ``scorer_tampered`` (the node
        path, mlguild.run.node, finishes it in its report and the journal, so the error and a
        resume name it and a resume does not run it again, then stops the run). ``cpus``: the
        CPUs the script is pinned to (a worker's share); its thread count follows."""
        node_dir = self.run.node_dir(node.id)
        code = (node_dir / "solution.py").read_text()
        started = time.monotonic()
        data = (data_dir or self.run.workspace.data_dir).resolve()
        forbidden = [p for p in self.forbidden if not data.is_relative_to(p)]  # a refit's data is under final/
        verdict = check_code(code, node_dir.resolve(), forbidden, data_dir=data)
        if not verdict.ok:
            return Outcome(
                verdict.kind or FailureKind.GUARD_REJECTED,
                failure=verdict.reason,
                timing={"exec_s": 0.0, "harness_s": time.monotonic() - started},
            )

        check_fingerprint(self.scorer_fingerprint)  # changed before this script ran: not its doing
        output = node_dir / "output"
        _clear(output)
        if node.is_blend or node.meta.get("stage"):
            self._stage_parent_outputs(
                node.meta.get("stage") or {p: p for p in node.parents}, node_dir / PARENT_OUTPUTS
            )
        cfg = self.run.config.sandbox
        limits = cfg.limits(timeout_s)
        threads = cfg.threads or os.cpu_count() or 1
        if cpus:
            limits.cpus, threads = cpus, min(threads, len(cpus))
        env = safe_env(
            cwd=node_dir,
            extra={  # MLGUILD_DATA is set by the sandbox (a fixed /data in bwrap)
                "MLGUILD_SEED": str(seed),
                "MLGUILD_TIME_BUDGET": str(int(timeout_s)),
                # When the limit's clock started (epoch seconds): a script that reads its clock
                # after importing torch would start its deadlines seconds late and be killed.
                "MLGUILD_STARTED_AT": f"{time.time():.3f}",
                "MLGUILD_THREADS": str(threads),
                # A refit the final stage made of a script on its own: one model may do (refit.one_model)
                **({"MLGUILD_REFIT": "1"} if node.op == Op.REFIT and node.meta.get("one_model") else {}),
                # A final refit's share of its limit its folds may use (refit.fold_share)
                **(
                    {"MLGUILD_FOLD_SHARE": str(node.meta["fold_share"])}
                    if node.op == Op.REFIT and node.meta.get("fold_share")
                    else {}
                ),
                **self._device_env(node_dir),
            },
        )
        result = self.sandbox.run(
            [sys.executable, "solution.py"],
            cwd=node_dir,
            env=env,
            limits=limits,
            stdout_path=node_dir / "stdout.txt",
            stderr_path=node_dir / "stderr.txt",
            data_dir=data,
        )
        exec_s = result.duration_s
        tampered = _scorer_change(self.scorer_fingerprint)
        if tampered:
            outcome = Outcome(
                FailureKind.SCORER_TAMPERED,
                failure=f"the scorer's files changed while this script ran ({tampered}); the run stops here",
            )
        elif node.op == Op.REFIT:
            outcome = self._judge_refit(result, output)
        elif node.op == Op.EDA:  # its findings are what it printed: nothing to score
            outcome = self._judge_failure(result) or Outcome(Status.EXPLORED)
        else:
            outcome = self._judge_failure(result) or self.judge_outputs(output, node.is_blend, score)
        outcome.printed_score = parse_printed_score(result.stdout_tail)
        outcome.exec = result.to_dict()
        for key in ("stdout_tail", "stderr_tail"):
            outcome.exec.pop(key, None)
        outcome.exec["device"] = devices.describe(self._gpus())
        keep_embeddings(output / EMBEDDINGS, self.run.path / EMBEDDINGS)
        outcome.timing = {
            "exec_s": round(exec_s, 3),
            "harness_s": round(time.monotonic() - started - exec_s, 4),
            "budget_s": round(timeout_s, 3),
        }  # what MLGUILD_TIME_BUDGET told the script
        outcome.timing.update(fit_record(output, exec_s))
        return outcome

    def _gpus(self) -> tuple[str, ...]:
        """The GPUs of the worker running this node (its share of the run's; see sandbox/devices)."""
        return devices.share(devices.discover(), current_worker(), self.run.config.search.workers)

    def _device_env(self, node_dir: Path) -> dict[str, str]:
        """What a script is told about devices, pretrained backbones and the run's embeddings cache."""
        cache = self.run.path / EMBEDDINGS
        cache.mkdir(exist_ok=True)
        return {**devices.script_env(self._gpus()), **backbones.script_env(), EMBEDDINGS_ENV: str(cache)}

    @staticmethod
    def _judge_failure(result) -> Outcome | None:
        """The failure of a script that did not end well, or None."""
        if result.status == ExecStatus.OK:
            return None
        tail = result.stderr_tail[-OUTPUT_TAIL:] or result.stdout_tail[-OUTPUT_TAIL:]
        what = result.reason or f"the script ended with status {result.status.value}"
        return Outcome(FailureKind(result.status.value), failure=f"{what}\n{tail}".strip())

    def judge_outputs(self, output: Path, blend: bool = False, score: bool = True) -> Outcome:
        """Validate the outputs a script wrote and score its holdout predictions on the sealed
        labels; with ``score`` False, check the files' contract (formats, ids) and score nothing."""
        holdout, submission = output / "holdout.csv", output / "submission.csv"
        missing = [p.name for p in (holdout, submission) if not p.is_file()]
        if missing:
            return Outcome(
                FailureKind.MISSING_OUTPUT,
                failure=f"the script finished but did not write output/{' and output/'.join(missing)}",
            )
        for path in (holdout, submission):
            # A link could point the scorer at sealed labels: outputs must be plain files of the node.
            if path.is_symlink() or path.stat().st_nlink > 1:
                return Outcome(
                    FailureKind.INVALID_OUTPUT, failure=f"output/{path.name} is a link; write a regular file"
                )
        spec = self.run.spec
        try:
            self.scorers.test.validate(submission)
        except SubmissionError as exc:
            return Outcome(
                FailureKind.INVALID_OUTPUT, failure=f"output/submission.csv is invalid ({exc.reason}): {exc.message}"
            )
        try:
            # The holdout part only: the confirmation rows hidden in the file are never scored here.
            with self.held.parts(holdout) as (scored, _):
                if not score:
                    self.scorers.holdout.validate(scored)
                    return Outcome(Status.CHECKED)
                value = self.scorers.holdout.score(scored).value
                outcome = Outcome(
                    Status.SCORED,
                    score=value,
                    flags=result_flags(value, self.metric, scored, spec.id_column),
                    outputs=["oof"] if _has_oof(output / "oof.csv", spec.submission_columns) else [],
                )
                if "oof" in outcome.outputs and value is not None:
                    self._check_oof(outcome, value, scored, output / "oof.csv", blend)
        except SubmissionError as exc:
            return Outcome(
                FailureKind.INVALID_OUTPUT, failure=f"output/holdout.csv is invalid ({exc.reason}): {exc.message}"
            )
        except ValueError as exc:  # values the metric cannot take (e.g. rmsle of a prediction <= -1)
            return Outcome(
                FailureKind.INVALID_OUTPUT,
                failure=f"output/holdout.csv cannot be scored with {self.metric.name}: {exc}",
            )
        return outcome

    def _check_oof(self, outcome: Outcome, value: float, holdout: Path, oof_path: Path, blend: bool) -> None:
        """Score the node's out-of-fold predictions on the training labels, and flag a
        validation that leaks (``leaky_cv``). A blend's out-of-fold predictions fitted its
        own weights, so they are optimistic by design: scored, never flagged. On a small
        holdout (``search.small_holdout_rows``) the node is then ranked by the pooled score
        (``mlguild.scoring.oof.pooled``), unless its validation leaks."""
        rows = len(self.scorers.holdout.expected_ids)
        small = rows < self.run.config.search.small_holdout_rows
        oof = self.oof_scorer.score(oof_path, spread=small)
        if oof is None:
            return
        outcome.oof_score = oof.score
        z = self.run.config.scorer.leaky_cv_z
        # On rows ordered in time, the out-of-fold rows nearest the holdout (the latest fold's):
        # older folds score the past, which honest models predict better than the future.
        compared = (self.oof_scorer.score(oof_path, latest=rows) if self.run.spec.time_column else None) or oof
        better = compared.score > value if self.metric.direction == "maximize" else compared.score < value
        holdout_spread = self.scorers.holdout.spread(holdout) if small or (z and better and not blend) else None
        if not blend and z and better and leaky_cv(value, holdout_spread, rows, compared, self.metric.direction, z):
            outcome.flags.append(LEAKY_CV)
        if small and LEAKY_CV not in outcome.flags:
            score, spread = pooled(value, holdout_spread, rows, oof)
            outcome.score, outcome.holdout_score, outcome.pooled_spread = score, value, spread

    def _judge_refit(self, result, output: Path) -> Outcome:
        """A refit's holdout is in its training data, so it has no score: it passes when it
        wrote a valid submission (mlguild.run.refit then checks it agrees with the node it refits)."""
        if result.status != ExecStatus.OK:
            tail = result.stderr_tail[-OUTPUT_TAIL:] or result.stdout_tail[-OUTPUT_TAIL:]
            return Outcome(
                FailureKind(result.status.value), failure=f"{result.reason or result.status.value}\n{tail}".strip()
            )
        submission = output / "submission.csv"
        if not submission.is_file() or submission.is_symlink() or submission.stat().st_nlink > 1:
            return Outcome(
                FailureKind.MISSING_OUTPUT, failure="the refit did not write output/submission.csv as a regular file"
            )
        try:
            self.scorers.test.validate(submission)
        except SubmissionError as exc:
            return Outcome(
                FailureKind.INVALID_OUTPUT, failure=f"output/submission.csv is invalid ({exc.reason}): {exc.message}"
            )
        return Outcome(
            Status.FINAL_OK, outputs=["oof"] if _has_oof(output / "oof.csv", self.run.spec.submission_columns) else []
        )

    def _stage_parent_outputs(self, sources: dict[str, str], dest: Path) -> None:
        """Copy each source node's predictions into ``parents/<name>/`` of the node, the only
        place a script can read them from (the sandbox binds nothing outside the node and the
        data). Copies, never links: a link would lead out of the node directory."""
        _clear(dest)
        for name, source in sources.items():
            src = self.run.node_dir(source) / "output"
            for file in ("oof.csv", "holdout.csv", "submission.csv", *PROBA_FILES):
                try:
                    data = read_no_follow(src / file)
                except OSError:  # a member without oof.csv is left out by the blend
                    continue
                (dest / name).mkdir(parents=True, exist_ok=True)
                (dest / name / file).write_bytes(data)

    def write_report(
        self, node: Node, outcome: Outcome, graph: SearchGraph | None = None, sections: list[str] | None = None
    ) -> None:
        node_dir = self.run.node_dir(node.id)
        score = {
            "node": node.id,
            "status": outcome.status,
            "holdout_score": outcome.score if outcome.holdout_score is None else outcome.holdout_score,
            **({"pooled_score": outcome.score} if outcome.holdout_score is not None else {}),
            "flags": outcome.flags,
            "metric": self.metric.name,
            "direction": self.metric.direction,
            "printed_score_untrusted": outcome.printed_score,
            "oof_score": outcome.oof_score,
            "timing": outcome.timing,
        }
        atomic_write(node_dir / "score.json", json.dumps(score, indent=2))
        lines = [
            f"# {node.id} ({node.op}{' of ' + ', '.join(node.parents) if node.parents else ''})",
            "",
            node.plan.strip(),
            "",
            f"- status: {outcome.status}",
            *_score_lines(outcome, self.metric.name, len(self.scorers.holdout.expected_ids)),
            f"- score the script printed: {outcome.printed_score if outcome.printed_score is not None else '—'} (logged, not trusted)",
            *(
                [
                    f"- out-of-fold {self.metric.name}: {outcome.oof_score:.6g} (scored by the harness on the training labels)"
                ]
                if outcome.oof_score is not None
                else []
            ),
            f"- run time: {outcome.timing.get('exec_s', 0):.1f} s",
        ]
        for flag in outcome.flags:
            lines.append(f"- ⚠ {describe(flag, self.metric, outcome.score, outcome.oof_score)}")
        if graph is not None:
            lines += ["", "## Result", *result_lines(node, graph, self.metric.name, node_dir)]
        lines += sections or []
        if outcome.failure:
            lines += ["", "## Failure", "```", outcome.failure[-OUTPUT_TAIL:], "```"]
        atomic_write(node_dir / "report.md", "\n".join(lines) + "\n")


def _score_lines(outcome: Outcome, metric: str, holdout_rows: int) -> list[str]:
    """The report's lines for the node's score: the holdout's, and the pooled score that
    ranks it on a small holdout, named as such."""
    if outcome.holdout_score is None:
        shown = outcome.score if outcome.score is not None else "—"
        return [f"- holdout {metric}: {shown} (scored by the harness on sealed labels)"]
    return [
        f"- pooled {metric}: {outcome.score:.6g} (ranks this node: the holdout's {holdout_rows} rows are few, so "
        "holdout and out-of-fold scores are weighted by their rows)",
        f"- holdout {metric}: {outcome.holdout_score} (scored by the harness on sealed labels)",
    ]


def _scorer_change(expected: str) -> str:
    """ "" when the scorer's files still match ``expected``, else what check_fingerprint says."""
    try:
        check_fingerprint(expected)
    except ScorerIntegrityError as exc:
        return exc.message
    return ""


def _has_oof(path: Path, columns: list[str]) -> bool:
    """Whether the optional out-of-fold predictions exist in the submission format (a fuse
    can blend only nodes that wrote them). Their values are checked by the script that uses them."""
    if not path.is_file() or path.is_symlink():
        return False
    with path.open(newline="", errors="replace") as fh:
        header, first = fh.readline(), fh.readline()
    return bool(first.strip()) and next(csv.reader([header]), []) == list(columns)


def _clear(output: Path) -> None:
    """Remove outputs left by an interrupted earlier attempt, so stale files are never scored."""
    if output.exists():
        for path in sorted(output.rglob("*"), reverse=True):
            path.unlink() if path.is_file() or path.is_symlink() else path.rmdir()
        output.rmdir()
