"""Scoring against sealed labels, outside the sandbox: the only source of the numbers the search uses.

A ``Scorer`` is built once per set of sealed answers (the holdout's, the test's) from the task
spec, and checks its own source files' fingerprint before every use: a script that rewrote
the scorer cannot improve its own score. Files are read by ``mlguild.scoring.submission`` (strictly:
structure, alignment, values); numbers a script prints are never read.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mlguild.metrics import Metric, Score, get_metric, per_column
from mlguild.scoring.integrity import check_fingerprint
from mlguild.scoring.ranked import ranked_scores
from mlguild.scoring.resample import resampled
from mlguild.scoring.scored_rows import scored_only
from mlguild.scoring.strict_csv import fail, preview
from mlguild.scoring.submission import (
    SubmissionFormat,
    known_labels,
    load_answers,
    load_rows,
    predictions,
    read_submission,
)

if TYPE_CHECKING:
    from mlguild.task.folder import TaskSpec


class Scorer:
    """Validates and scores the submissions for one set of rows, against one set of sealed
    answers, for one task: built once, used for every node.

    With ``answers`` (a string frame from ``load_answers``, in the expected row order) it
    can ``score`` and ``bootstrap_wins``; without them (a test set whose answers nobody has)
    it can only ``validate`` files for ``expected_ids``. ``fingerprint``, when given, is the
    scorer's fingerprint taken when the run started: every call first checks that the
    scorer's files still match it (ScorerIntegrityError otherwise). ``labels`` are more
    labels a label metric's predictions may take, beyond those of the answers."""

    def __init__(
        self,
        spec: TaskSpec,
        *,
        answers: pd.DataFrame | None = None,
        expected_ids: Sequence[str] | None = None,
        fingerprint: str | None = None,
        max_bytes: int | None = SubmissionFormat.max_bytes,
        labels: Collection[str] = (),
    ):
        if expected_ids is not None:
            ids = list(expected_ids)
        elif answers is not None:
            ids = answers[spec.id_column].tolist()
        else:
            raise ValueError("a Scorer needs sealed answers or the expected ids")
        self.spec = spec
        self.metric = get_metric(spec.metric)
        self.format = SubmissionFormat(
            spec.id_column, spec.submission_columns, spec.ids_unique, max_bytes=max_bytes,
            key_columns=tuple(spec.key_columns), ranked=spec.ranked_file, group_column=spec.group_column,
        )  # fmt: skip
        self.answers = answers
        self.expected_ids = ids
        self.fingerprint = fingerprint
        self.labels: set[str] | None = None  # for label metrics: every label a prediction may take
        if self.metric.prediction == "label":
            self.labels = set(labels)
            if answers is not None:
                self.labels |= known_labels(answers, spec.target_columns, spec.positive_label, spec.classes, None)

    @classmethod
    def from_file(cls, spec: TaskSpec, answers_path: str | os.PathLike, **options: Any) -> Scorer:
        """A Scorer for the sealed answers in ``answers_path`` (ValueError if it is malformed)."""
        return cls(spec, answers=load_answers(answers_path, spec.id_column), **options)

    def validate(self, path: str | os.PathLike) -> pd.DataFrame:
        """Check a submission's structure and values (SubmissionError); its rows as strings."""
        self._check_integrity()
        return read_submission(path, self.format, self.expected_ids, metric=self.metric, labels=self.labels)

    def score(self, path: str | os.PathLike) -> Score:
        """Validate a submission and score it against the answers. Raises SubmissionError for a
        bad file, ValueError for values the metric cannot take or a problem with the answers."""
        self._check_integrity()
        spec = self.spec
        result = score_submission(
            path, self._answers(), self.format, self.metric, spec.target_columns, spec.metric_params,
            spec.positive_label, spec.classes, labels=self.labels,
        )  # fmt: skip
        return result.score

    def bootstrap_wins(self, path_a: str | os.PathLike, path_b: str | os.PathLike, seed: int = 0) -> float | None:
        """The share of bootstrap resamples of the rows on which ``a`` scores better than ``b``
        (see the module function ``bootstrap_wins``)."""
        self._check_integrity()
        spec = self.spec
        return bootstrap_wins(
            path_a, path_b, self._answers(), self.format, self.metric, spec.target_columns, spec.metric_params,
            spec.positive_label, spec.classes, seed=seed, labels=self.labels,
        )  # fmt: skip

    def spread(self, path: str | os.PathLike, seed: int = 0) -> float | None:
        """The standard deviation of the submission's score over bootstrap resamples of the
        rows: its noise (see the module function ``bootstrap_spread``)."""
        self._check_integrity()
        spec = self.spec
        return bootstrap_spread(
            path, self._answers(), self.format, self.metric, spec.target_columns, spec.metric_params,
            spec.positive_label, spec.classes, seed=seed, labels=self.labels,
        )  # fmt: skip

    def column_scores(self, path: str | os.PathLike) -> dict[str, float] | None:
        """For a task with several target columns whose metric averages a one-column metric
        (mcrmse averages rmse): that metric on each column, so a prompt can say which target
        a model gets wrong. None for other tasks, or when a column cannot be scored alone."""
        spec, name = self.spec, self.metric.name
        if len(spec.target_columns) < 2 or per_column(name) == name:
            return None
        self._check_integrity()
        truth, pred, _, _ = _prepared(
            path, self._answers(), self.format, self.metric, spec.target_columns, spec.metric_params,
            spec.positive_label, spec.classes, labels=self.labels,
        )  # fmt: skip
        one = get_metric(per_column(name))
        truth, pred = np.asarray(truth), np.asarray(pred)
        try:
            return {c: float(one(truth[:, j], pred[:, j])) for j, c in enumerate(spec.target_columns)}
        except (ValueError, IndexError):  # e.g. one class only in a column, for AUC
            return None

    def _answers(self) -> pd.DataFrame:
        if self.answers is None:
            raise ValueError("this Scorer has no sealed answers: it can only validate")
        return self.answers

    def _check_integrity(self) -> None:
        if self.fingerprint is not None:
            check_fingerprint(self.fingerprint)


@dataclass(frozen=True)
class RunScorers:
    """The scorers of one run, built once from its sealed files."""

    holdout: Scorer  # scores every node's holdout predictions: the numbers the search uses
    test: Scorer  # validates every test submission (the sample submission's ids; no answers)
    grade: Scorer | None  # grades the final submission once, when the task has test answers
    fingerprint: str  # the scorer's fingerprint when the run started; every Scorer checks it


@dataclass(frozen=True)
class ScoreResult:
    """The outcome of scoring one valid submission."""

    score: Score
    n_rows: int
    metric: str


def _infer_positive(values: np.ndarray, column: str) -> str:
    """The positive label of 0/1 or True/False truths; anything else must be spelled out."""
    seen = set(pd.unique(np.ravel(values)).tolist())
    for neg, pos in (("0", "1"), ("False", "True")):
        if seen <= {neg, pos}:
            return pos
    raise ValueError(
        f"truth column {column!r} holds {sorted(seen)[:5]}, not 0/1 or True/False; set the task's positive_label"
    )


def _truth(answers: pd.DataFrame, columns: list[str], kind: str, positive_label: str | None) -> Any:
    """Convert truth columns; a problem here is the task's, so it raises ValueError."""
    out = []
    for c in columns:
        v = answers[c].to_numpy()
        if kind == "binary":
            out.append((v == (positive_label or _infer_positive(v, c))).astype(np.int8))
        elif kind == "value":
            f = np.asarray(pd.to_numeric(v, errors="coerce"), dtype=np.float64)
            if not np.isfinite(f).all():
                raise ValueError(f"truth column {c!r} has non-numeric values, e.g. {v[~np.isfinite(f)][0]!r}")
            out.append(f)
        elif kind == "integer":
            try:
                out.append(v.astype(np.int64))
            except ValueError:
                raise ValueError(f"truth column {c!r} does not hold integer labels") from None
        elif kind == "tokens":
            out.append([s.split() for s in v.tolist()])
        else:
            out.append(v)
    return out[0] if len(out) == 1 else np.column_stack(out)


def score_submission(
    path: str | os.PathLike,
    answers: pd.DataFrame,
    fmt: SubmissionFormat,
    metric: Metric,
    target_columns: list[str],
    metric_params: dict | None = None,
    positive_label: str | None = None,
    classes: list[str] | None = None,
    labels: Collection[str] | None = None,
) -> ScoreResult:
    """Validate a submission file and score it against sealed ``answers``.

    ``answers`` is a string DataFrame with the id column, ``target_columns`` and any
    ``fmt.key_columns``, in the expected row order (e.g. from ``load_answers``). For
    ``class_probabilities`` metrics the prediction columns are ``classes`` (default: the
    format's value columns) and the one target column holds the class label; otherwise
    the prediction columns are ``target_columns``. Grouped metrics take each row's group
    from ``metric_params["group_column"]`` (a column of ``answers``, default the id
    column) unless a ``groups`` array is given. For label metrics a predicted label must be
    known: in the answers, ``classes``, ``positive_label``, the training labels
    ``load_answers`` found beside the answers, or ``labels`` (more to accept); else
    ``unknown_label``.
    Raises SubmissionError for anything wrong with the file; ValueError for a problem with
    the task's answers or format.
    """
    y_true, y_pred, params, n_rows = _prepared(
        path, answers, fmt, metric, target_columns, metric_params, positive_label, classes, labels
    )
    value = metric(y_true, y_pred, **params)
    return ScoreResult(Score(value, metric.direction), n_rows=n_rows, metric=metric.name)


def bootstrap_wins(
    path_a: str | os.PathLike,
    path_b: str | os.PathLike,
    answers: pd.DataFrame,
    fmt: SubmissionFormat,
    metric: Metric,
    target_columns: list[str],
    metric_params: dict | None = None,
    positive_label: str | None = None,
    classes: list[str] | None = None,
    n_resamples: int = 200,
    seed: int = 0,
    labels: Collection[str] | None = None,
) -> float | None:
    """The share of bootstrap resamples of the answer rows on which submission ``a`` scores
    strictly better than ``b`` (paired: both scored on the same resampled rows; for a grouped
    metric, whole groups). None when no resample could be scored. Same validation as
    ``score_submission``."""
    args = (answers, fmt, metric, target_columns, metric_params, positive_label, classes, labels)
    truth, pred_a, params, _ = _prepared(path_a, *args)
    _, pred_b, _, _ = _prepared(path_b, *args)
    wins = scored = 0
    for a, b in resampled(metric, params, truth, [pred_a, pred_b], n_resamples, seed):
        scored += 1
        wins += Score(a, metric.direction).better_than(Score(b, metric.direction))
    return wins / scored if scored else None


def bootstrap_spread(
    path: str | os.PathLike,
    answers: pd.DataFrame,
    fmt: SubmissionFormat,
    metric: Metric,
    target_columns: list[str],
    metric_params: dict | None = None,
    positive_label: str | None = None,
    classes: list[str] | None = None,
    n_resamples: int = 100,
    seed: int = 0,
    labels: Collection[str] | None = None,
) -> float | None:
    """The standard deviation of the submission's score over bootstrap resamples of its rows.
    (for a grouped metric, of its groups). None where fewer than half the resamples could be
    scored. Same validation as ``score_submission``."""
    truth, pred, params, _ = _prepared(
        path, answers, fmt, metric, target_columns, metric_params, positive_label, classes, labels
    )
    values = [v for (v,) in resampled(metric, params, truth, [pred], n_resamples, seed) if np.isfinite(v)]
    return float(np.std(values, ddof=1)) if len(values) >= max(2, n_resamples // 2) else None


def _prepared(
    path,
    answers: pd.DataFrame,
    fmt: SubmissionFormat,
    metric: Metric,
    target_columns: list[str],
    metric_params: dict | None,
    positive_label: str | None,
    classes: list[str] | None,
    labels: Collection[str] | None = None,
):
    """Validate a submission and return (y_true, y_pred, metric params, rows) in answer order."""
    params, idc = dict(metric_params or {}), fmt.id_column
    needed = [idc, *fmt.key_columns, *target_columns]
    if not target_columns or any(c not in answers.columns for c in needed):
        raise ValueError(f"answers need columns {needed}; they have {list(answers.columns)}")
    sub, pos = load_rows(path, fmt, answers[idc].tolist())

    def aligned(values: Any) -> Any:
        """File order -> expected order."""
        if pos is None:
            return values
        return values[pos] if isinstance(values, np.ndarray) else [values[i] for i in pos]

    if fmt.ranked:  # no score column: a row's place among its group's rows is its score
        y_true = _truth(answers, target_columns, metric.truth or "label", positive_label)
        y_pred = ranked_scores(sub, answers, fmt)
        return (*scored_only(y_true, y_pred, _with_groups(metric, params, answers, fmt), answers), len(sub))
    for key in fmt.key_columns:  # e.g. the item of a (user, item) row: must match row for row
        keys, want = aligned(sub[key].to_numpy()), answers[key].to_numpy()
        if (keys != want).any():
            i = int(np.argmax(keys != want))
            raise fail(
                "key_mismatch" if fmt.ids_unique else "reordered",
                f"row {aligned(sub.index.to_numpy())[i]} has {key} {preview(keys[i])} where {preview(want[i])} "
                "was expected; keep the sample submission's rows and order",
            )

    if metric.prediction == "class_probabilities":
        names = list(classes) if classes is not None else fmt.value_columns
        if len(target_columns) != 1 or any(c not in fmt.value_columns for c in names):
            raise ValueError(
                f"class_probabilities needs one target column and classes among the "
                f"submission's value columns; got {target_columns} and {names}"
            )
        codes = answers[target_columns[0]].map({c: i for i, c in enumerate(names)})
        if codes.isna().any():
            bad = sorted(set(answers[target_columns[0]][codes.isna()].tolist()))
            raise ValueError(f"truth labels {bad[:5]} are not among the class columns {names}")
        y_true = codes.to_numpy(dtype=np.int64)
        y_pred = aligned(np.column_stack(predictions(sub, names, metric, idc)))
    else:
        absent = [c for c in target_columns if c not in fmt.value_columns]
        if absent and len(target_columns) == 1 and len(fmt.value_columns) == 1:
            # One prediction column scores the one target whatever it is called (a ranking's
            # "score" column for a "chosen" label, a "predicted" list for the "relevant" items).
            answers = answers.rename(columns={target_columns[0]: fmt.value_columns[0]})
            target_columns, absent = fmt.value_columns, []
        if absent or (metric.prediction in ("ranked_list", "label_set") and len(target_columns) != 1):
            raise ValueError(
                f"target columns {target_columns} must be value columns of the "
                f"submission {fmt.columns} (ranked lists and label sets take exactly one)"
            )
        y_true = _truth(answers, target_columns, metric.truth or "label", positive_label)
        known = (
            known_labels(answers, target_columns, positive_label, classes, labels)
            if metric.prediction == "label"
            else None
        )
        preds = [aligned(p) for p in predictions(sub, target_columns, metric, idc, known)]
        y_pred = preds[0] if len(preds) == 1 else np.column_stack(preds)
        if "positive_label" in metric.params and "positive_label" not in params:
            params["positive_label"] = positive_label or _infer_positive(y_true, target_columns[0])

    return (*scored_only(y_true, y_pred, _with_groups(metric, params, answers, fmt), answers), len(sub))


def _with_groups(metric: Metric, params: dict, answers: pd.DataFrame, fmt: SubmissionFormat) -> dict:
    """``params`` with each answer row's group for a grouped metric: the ``group_column`` of the
    metric params or the format, else the id column."""
    if metric.grouped and "groups" not in params:
        group_column = params.pop("group_column", fmt.group_column or fmt.id_column)
        if group_column not in answers.columns:
            raise ValueError(f"group column {group_column!r} is not in the answers")
        params["groups"] = answers[group_column].to_numpy()
    return params
