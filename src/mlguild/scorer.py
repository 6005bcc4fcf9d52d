"""Strict submission validation and scoring against sealed labels, outside the sandbox.

The score the search uses comes only from here: a file is read, checked row by row and
column by column, aligned with the expected ids, and scored with a registered metric.
Numbers a script prints are never read. Every rejection is a ``SubmissionError`` whose
``reason`` is a short stable code and whose message names the row, column and text.

Choices worth knowing:
* A UTF-8 byte-order mark is stripped and accepted (Excel writes one); the header must
  still match exactly once it is removed.
* Blank lines at the end of the file are ignored; a blank line between rows is an error.
* Ids are exact strings, never parsed: ``"001"`` and ``"1"`` are different ids.
* Numeric cells may carry surrounding spaces (``" 0.5"``); ids and labels may not, since
  they are compared exactly.
* For label metrics a predicted label must be a known one: a label of the answers, of the
  task's ``classes`` or ``positive_label``, or of its training rows (``load_answers`` reads
  those from ``labels.json`` beside the answers, written by the firewall). ``"1.0"`` for
  ``"1"``, ``"True"`` for ``"1"`` or ``" 1"`` is refused (``unknown_label``), not scored wrong.
* A file with more rows than expected is read only until that is certain (see strict_csv).
* Messages are short and name the row; a cell value in them is cut to a preview.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from mlguild.errors import ScorerIntegrityError, SubmissionError
from mlguild.metrics import Metric, Score
from mlguild.strict_csv import fail, preview, read_table, to_frame, to_objects

KNOWN_LABELS = "labels.json"
"""Beside a sealed answers file: {target column: every label of the task's training rows}."""
_ATTR = "mlguild_known_labels"
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class SubmissionFormat:
    """The exact shape a submission file must have."""

    id_column: str
    columns: list[str]
    """Exact expected header, id column included; order matters."""
    ids_unique: bool = True
    """False for ranking tasks where (user, item) keys repeat: rows are aligned by position."""
    max_bytes: int | None = 512 * 1024**2
    """Files larger than this are refused before a byte is read (``scorer.max_submission_mb``
    in the run's config; None: no limit)."""
    key_columns: tuple[str, ...] = ()
    """Other key columns (e.g. the item of a (user, item) row): never parsed as predictions,
    and when scoring they must equal the answers' values row for row."""

    def __post_init__(self) -> None:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"submission format has duplicate column names: {self.columns}")
        missing = [c for c in (self.id_column, *self.key_columns) if c not in self.columns]
        if missing:
            raise ValueError(f"key column(s) {missing} are not among {self.columns}")

    @property
    def value_columns(self) -> list[str]:
        """The prediction columns: everything but the id and key columns."""
        return [c for c in self.columns if c != self.id_column and c not in self.key_columns]


@dataclass(frozen=True)
class ScoreResult:
    """The outcome of scoring one valid submission."""

    score: Score
    n_rows: int
    metric: str


def _show(values: Sequence[Any], limit: int = 5) -> str:
    return ", ".join(preview(v) for v in list(values)[:limit]) + (", ..." if len(values) > limit else "")


class _Labels(frozenset):
    """Known labels riding on an answers DataFrame's ``attrs``: pandas deep-copies attrs on
    every operation, and these never change, so the copy is the object itself."""

    def __deepcopy__(self, memo: dict) -> _Labels:
        return self


# ----------------------------------------------------------------- public reading


def load_answers(path: str | os.PathLike, id_column: str) -> pd.DataFrame:
    """Read a sealed answers CSV as strings (exact text, no NA parsing, ids untouched).

    Raises ValueError when the file is malformed or lacks ``id_column``: a broken answers
    file is a task problem, never the submission's fault.
    """
    try:
        header, cols = read_table(path, max_bytes=None)
    except SubmissionError as e:
        raise ValueError(f"sealed answers file is malformed ({e.reason}): {e.message}") from None
    if len(set(header)) != len(header) or id_column not in header:
        raise ValueError(
            f"sealed answers file {path} needs unique column names including {id_column!r}; it has {header}"
        )
    frame = to_frame(header, cols)
    known = Path(path).with_name(KNOWN_LABELS)
    if known.is_file():
        try:
            labels = json.loads(known.read_text())
            frame.attrs[_ATTR] = _Labels(str(v) for values in labels.values() for v in values)
        except (OSError, ValueError, AttributeError, TypeError) as e:
            raise ValueError(f"known labels file {known} is malformed: {e}") from None
    return frame


def read_submission(
    path: str | os.PathLike,
    fmt: SubmissionFormat,
    expected_ids: Sequence[str],
    metric: Metric | None = None,
    labels: Collection[str] | None = None,
) -> pd.DataFrame:
    """Validate a submission's structure and return it as a DataFrame of strings.

    Columns are ``fmt.columns``; rows follow ``expected_ids``: reordered by id when
    ``fmt.ids_unique``, otherwise the ids must equal ``expected_ids`` position by position
    (a reordered file is rejected, never silently re-aligned). The index holds each row's
    1-based data-row number in the file (named ``row``) so messages can point at it. With
    ``metric``, the values of ``fmt.value_columns`` are checked too (as when scoring), and
    with ``labels`` a label metric's predictions must be among them.
    Raises SubmissionError: missing, too_large, empty, encoding, bad_header, bad_row,
    duplicate_ids, missing_ids, extra_ids, reordered, and the value reasons.
    """
    sub, pos = _load(path, fmt, expected_ids)
    if metric is not None:
        _predictions(sub, fmt.value_columns, metric, fmt.id_column, labels)
    return sub if pos is None else sub.iloc[pos]


def _load(
    path: str | os.PathLike, fmt: SubmissionFormat, expected_ids: Sequence[str]
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """The submission in file order, and for each expected row its position in the file
    (None when the file is already in expected order). Values are parsed in file order
    because parsing strings scattered by a permutation is several times slower."""
    expected = list(expected_ids)
    # At most len(expected) + 1 rows come back: one more than expected is proof enough.
    header, cols = read_table(path, fmt.max_bytes, max_rows=len(expected))
    if header != list(fmt.columns):
        dups = sorted({h for h in header if header.count(h) > 1})
        why = f"; duplicate name(s) {_show(dups)}" if dups else ""
        raise fail("bad_header", f"header is [{_show(header, 10)}], expected {list(fmt.columns)}{why}")
    ids = cols[fmt.columns.index(fmt.id_column)]
    if not ids and expected:
        raise fail("empty", f"{path} has a header but no data rows (expected {len(expected):,})")
    if len(ids) > len(expected):
        _reject_extra_rows(ids, expected, fmt.ids_unique)
    sub = to_frame(header, cols, pd.Index(np.arange(1, len(ids) + 1), name="row"))
    if ids == expected:  # the common case, compared at C speed before any hashing
        return sub, None
    if not fmt.ids_unique:
        _reject_positional(ids, expected)
    return sub, _align_unique(ids, expected)


def _reject_extra_rows(ids: list[str], expected: list[str], unique: bool) -> NoReturn:
    """The file has more rows than expected; ``ids`` are its first len(expected) + 1 (the
    rest was not read). Among them an id repeats or one is not expected: say which."""
    n = len(expected)
    what = f"the file has more than the {n:,} rows expected (one per id of the sample submission; read up to row {n + 1:,})"
    index = pd.Index(ids)
    if unique and not index.is_unique:
        dup = index[index.duplicated()].unique()
        second = int(np.flatnonzero(index == dup[0])[1]) + 1
        raise fail(
            "duplicate_ids",
            f"{what}: row {second:,} repeats id {preview(dup[0])}; "
            f"{len(dup):,} id(s) appear more than once, e.g. {_show(dup)}",
        )
    extra = index[~index.isin(pd.Index(expected))]
    if unique and len(extra):
        raise fail("extra_ids", f"{what}: {len(extra):,} id(s) are not expected, e.g. {_show(extra)}")
    raise fail("extra_ids", f"{what} (rows are matched by position for this task)" if not unique else what)


def _align_unique(ids: list[str], expected: list[str]) -> np.ndarray:
    """For each expected id, its position in the file; rejects duplicate, missing, extra ids."""
    # One hash pass over both lists: factorize numbers values by first appearance, so
    # unique expected ids get codes 0..n-1 and a file id's code is its expected position.
    n = len(expected)
    codes = pd.factorize(to_objects(expected + ids))[0]
    if not np.array_equal(codes[:n], np.arange(n)):
        raise ValueError("expected ids are not unique; this task needs ids_unique=False")
    where = codes[n:]  # file row -> expected position; >= n when the id is not expected
    if len(ids) == n and (where < n).all() and (np.bincount(where, minlength=n) == 1).all():
        pos = np.empty(n, dtype=np.int64)
        pos[where] = np.arange(n)
        return pos
    # Not a permutation: work out why (speed no longer matters on this path).
    if not all(isinstance(i, str) for i in expected):  # 1 != "1": a caller bug, not the file's
        raise TypeError("expected ids must be strings exactly as written (read them with dtype=str)")
    sub_index, exp_index = pd.Index(ids), pd.Index(expected)
    if not sub_index.is_unique:
        dup = sub_index[sub_index.duplicated()].unique()
        second = int(np.flatnonzero(sub_index == dup[0])[1]) + 1
        raise fail(
            "duplicate_ids",
            f"row {second:,} repeats id {preview(dup[0])}; {len(dup):,} id(s) appear more than once, e.g. {_show(dup)}",
        )
    extra = sub_index[where >= n]
    miss = exp_index[~exp_index.isin(sub_index)]
    if len(miss):
        also = f"; it also has {len(extra):,} unexpected id(s), e.g. {_show(extra)}" if len(extra) else ""
        raise fail("missing_ids", f"{len(miss):,} expected id(s) are missing, e.g. {_show(miss)}{also}")
    raise fail("extra_ids", f"{len(extra):,} id(s) are not expected, e.g. {_show(extra)}")


def _reject_positional(ids: list[str], expected: list[str]) -> NoReturn:
    """Ids repeat, so rows align by position: explain how this file differs."""
    if not all(isinstance(i, str) for i in expected):
        raise TypeError("expected ids must be strings exactly as written (read them with dtype=str)")
    note = "(rows are matched by position for this task)"
    if len(ids) < len(expected):
        raise fail("missing_ids", f"file has {len(ids):,} rows, expected {len(expected):,} {note}")
    i = next(k for k, (a, b) in enumerate(zip(ids, expected)) if a != b)
    raise fail(
        "reordered",
        f"row {i + 1} has id {preview(ids[i])} where {preview(expected[i])} was expected; "
        "ids repeat in this task, so rows must keep the sample submission's order",
    )


# ----------------------------------------------------------------- value conversion


def _where(sub: pd.DataFrame, i: int, column: str, id_column: str) -> str:
    return f"row {sub.index[i]} (id {preview(sub[id_column].iat[i])}), column {preview(column)}"


def _floats(sub: pd.DataFrame, column: str, id_column: str, unit: bool) -> np.ndarray:
    """A column as finite float64; ``unit`` also requires values in [0, 1]."""
    text = sub[column].to_numpy()
    vals = np.asarray(pd.to_numeric(text, errors="coerce"), dtype=np.float64)
    bad = ~np.isfinite(vals)
    if bad.any():
        i = int(np.argmax(bad))
        s = text[i]
        try:
            # float() is laxer than the parser above ("1_000", non-ASCII digits): such
            # text is still rejected, but named for what it is.
            finite = math.isfinite(float(s))
            reason = "not_numeric" if finite else "non_finite"
            why = "is not a plain decimal number" if finite else "is not a finite number"
        except ValueError:
            reason, why = "not_numeric", "is empty" if not s.strip() else "is not a number"
        raise fail(
            reason,
            f"{_where(sub, i, column, id_column)}: {preview(s)} {why} ({int(bad.sum()):,} such cell(s) in this column)",
        )
    out = (vals < 0) | (vals > 1) if unit else None
    if out is not None and out.any():
        i = int(np.argmax(out))
        raise fail(
            "out_of_range", f"{_where(sub, i, column, id_column)}: probability {preview(text[i])} is outside [0, 1]"
        )
    return vals


def _labels(sub: pd.DataFrame, column: str, id_column: str, integer: bool, known: Collection[str] | None) -> np.ndarray:
    text = sub[column].to_numpy()
    empty = text == ""
    if empty.any():
        i = int(np.argmax(empty))
        raise fail("empty_label", f"{_where(sub, i, column, id_column)}: the label is empty")
    if not integer:
        if known is not None:
            _known_only(sub, column, id_column, text, pd.Series(text, dtype=object).isin(known).to_numpy(), known)
        return text
    ok = pd.Series(text, dtype=object).str.fullmatch(_INTEGER.pattern).to_numpy(dtype=bool)
    if not ok.all():
        i = int(np.argmin(ok))
        raise fail("not_integer", f"{_where(sub, i, column, id_column)}: {preview(text[i])} is not an integer label")
    values = text.astype(np.int64)
    if known is not None:  # integers compare as numbers: "03" is the label 3
        ints = {int(k) for k in known if isinstance(k, str) and _INTEGER.fullmatch(k)}
        _known_only(sub, column, id_column, text, np.isin(values, list(ints)), sorted(ints))
    return values


def _known_only(
    sub: pd.DataFrame, column: str, id_column: str, text: np.ndarray, ok: np.ndarray, known: Collection
) -> None:
    """Reject the first label outside ``known``: scoring it as merely wrong would hide a
    formatting bug ("1.0" for "1") behind a bad score."""
    if ok.all():
        return
    i = int(np.argmin(ok))
    spaces = " (it has surrounding spaces)" if isinstance(text[i], str) and text[i] != text[i].strip() else ""
    shown = sorted(known, key=str)
    raise fail(
        "unknown_label",
        f"{_where(sub, i, column, id_column)}: {preview(text[i])} is not a known label"
        f"{spaces}; known: {_show(shown, 8)} ({int((~ok).sum()):,} such cell(s))",
    )


def _predictions(
    sub: pd.DataFrame, columns: list[str], metric: Metric, id_column: str, known: Collection[str] | None = None
) -> list[Any]:
    """Each prediction column checked and converted for ``metric``; raises SubmissionError.
    ``known``: the labels a label metric's predictions must be among (None: not checked)."""
    kind = metric.prediction
    if kind == "ranked_list":  # space-separated tokens; an empty list is allowed (scores 0)
        return [[s.split() for s in sub[c].tolist()] for c in columns]
    if kind == "label":
        return [_labels(sub, c, id_column, metric.truth == "integer", known) for c in columns]
    unit = kind in ("probability", "class_probabilities")
    return [_floats(sub, c, id_column, unit) for c in columns]


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
    strictly better than ``b`` (paired: both scored on the same resampled rows). None for
    grouped metrics and ranked lists, whose rows cannot be resampled one by one, or when no
    resample could be scored. Same validation as ``score_submission``."""
    if metric.grouped or metric.prediction == "ranked_list":
        return None
    args = (answers, fmt, metric, target_columns, metric_params, positive_label, classes, labels)
    truth, pred_a, params, _ = _prepared(path_a, *args)
    _, pred_b, _, _ = _prepared(path_b, *args)
    truth, pred_a, pred_b = np.asarray(truth), np.asarray(pred_a), np.asarray(pred_b)
    rng = np.random.default_rng(seed)
    wins = scored = 0
    for _ in range(n_resamples):
        rows = rng.integers(0, len(truth), size=len(truth))
        try:
            a = Score(metric(truth[rows], pred_a[rows], **params), metric.direction)
            b = Score(metric(truth[rows], pred_b[rows], **params), metric.direction)
        except ValueError:  # e.g. a resample with one class only, for AUC
            continue
        scored += 1
        wins += a.better_than(b)
    return wins / scored if scored else None


def known_labels(
    answers: pd.DataFrame,
    target_columns: list[str],
    positive_label: str | None,
    classes: list[str] | None,
    labels: Collection[str] | None,
) -> set[str]:
    """Every label a prediction may rightly take (see ``score_submission``); also what to pass
    as ``labels`` to ``read_submission`` for a test submission, which has no answers."""
    known = set(pd.unique(answers[target_columns].to_numpy().ravel()).tolist())
    known.update(classes or ())
    known.update(answers.attrs.get(_ATTR, ()))
    known.update(labels or ())
    if positive_label is not None:
        known.add(positive_label)
    return known


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
    sub, pos = _load(path, fmt, answers[idc].tolist())

    def aligned(values: Any) -> Any:
        """File order -> expected order."""
        if pos is None:
            return values
        return values[pos] if isinstance(values, np.ndarray) else [values[i] for i in pos]

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
        y_pred = aligned(np.column_stack(_predictions(sub, names, metric, idc)))
    else:
        absent = [c for c in target_columns if c not in fmt.value_columns]
        if absent or (metric.prediction == "ranked_list" and len(target_columns) != 1):
            raise ValueError(
                f"target columns {target_columns} must be value columns of the "
                f"submission {fmt.columns} (ranked lists take exactly one)"
            )
        y_true = _truth(answers, target_columns, metric.truth or "label", positive_label)
        known = (
            known_labels(answers, target_columns, positive_label, classes, labels)
            if metric.prediction == "label"
            else None
        )
        preds = [aligned(p) for p in _predictions(sub, target_columns, metric, idc, known)]
        y_pred = preds[0] if len(preds) == 1 else np.column_stack(preds)
        if "positive_label" in metric.params and "positive_label" not in params:
            params["positive_label"] = positive_label or _infer_positive(y_true, target_columns[0])

    if metric.grouped and "groups" not in params:
        group_column = params.pop("group_column", idc)
        if group_column not in answers.columns:
            raise ValueError(f"group column {group_column!r} is not in the answers")
        params["groups"] = answers[group_column].to_numpy()
    return y_true, y_pred, params, len(sub)


# ----------------------------------------------------------------- integrity


def fingerprint() -> str:
    """SHA-256 over the scorer's own source files (this module, its CSV reader and metrics.py)."""
    h = hashlib.sha256()
    for name in ("scorer.py", "strict_csv.py", "metrics.py", "score.py"):
        h.update(name.encode() + b"\0" + (Path(__file__).parent / name).read_bytes() + b"\0")
    return h.hexdigest()


def check_fingerprint(expected: str) -> None:
    """Raise ScorerIntegrityError if the scorer's files changed since ``expected`` was taken."""
    got = fingerprint()
    if got != expected:
        raise ScorerIntegrityError(
            f"the scorer's source changed during the run (fingerprint {got[:12]} != {expected[:12]})",
            fix="restore src/mlguild/scorer.py, "
            "strict_csv.py, metrics.py and score.py (e.g. `git checkout src/mlguild`), or start a new run",
        )
