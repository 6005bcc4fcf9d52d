"""Reading a submission strictly: its format, its rows aligned with the expected ids, its values.

Every rejection is a ``SubmissionError`` whose ``reason`` is a short stable code and whose
message names the row, column and text (cut to a preview). Choices worth knowing:

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
* A ranked list (MAP@k) that names an item twice is refused (``duplicate_item``); a query
  with no row is ``missing_ids`` like any other missing id.
"""

from __future__ import annotations

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

from mlguild.core.errors import SubmissionError
from mlguild.metrics import Metric
from mlguild.scoring.strict_csv import fail, preview, read_table, to_frame, to_objects
from mlguild.task.spec import KNOWN_LABELS

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
    ranked: bool = False
    """The file's order is the ranking (no score column): each group's rows may come in any
    order, and a row's place among its group's rows is its rank (see ``ranked_scores``)."""
    group_column: str | None = None
    """The column of the groups a ranked file orders (None: the id column)."""

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


def _show(values: Sequence[Any], limit: int = 5) -> str:
    return ", ".join(preview(v) for v in list(values)[:limit]) + (", ..." if len(values) > limit else "")


class _Labels(frozenset):
    """Known labels riding on an answers DataFrame's ``attrs``: pandas deep-copies attrs on
    every operation, and these never change, so the copy is the object itself."""

    def __deepcopy__(self, memo: dict) -> _Labels:
        return self


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
    sub, pos = load_rows(path, fmt, expected_ids)
    if metric is not None:
        predictions(sub, fmt.value_columns, metric, fmt.id_column, labels)
    return sub if pos is None else sub.iloc[pos]


def load_rows(
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
    if not fmt.ids_unique and fmt.ranked:
        return sub, _align_groups(ids, expected)
    if not fmt.ids_unique:
        _reject_positional(ids, expected)
    return sub, _align_unique(ids, expected)


def _align_groups(ids: list[str], expected: list[str]) -> np.ndarray:
    """For each expected row, a file row of the same repeated id (a group's k-th expected row
    takes its k-th row in the file): a ranked file reorders rows within their group, so only
    each id's count is checked here; the scorer then matches rows by their keys."""
    n = len(expected)
    codes = pd.factorize(to_objects(expected + ids))[0]
    want, got = codes[:n], codes[n:]
    extra = got >= (int(want.max()) + 1 if n else 0)
    if extra.any():
        raise fail(
            "extra_ids",
            f"{int(extra.sum()):,} row(s) have ids that are not expected, e.g. {_show([ids[i] for i in np.flatnonzero(extra)])}",
        )
    size = int(want.max()) + 1 if n else 0
    have, need = np.bincount(got, minlength=size), np.bincount(want, minlength=size)
    if (have != need).any():
        g = int(np.argmax(have != need))
        first = expected[int(np.argmax(want == g))]
        raise fail(
            "missing_ids" if have[g] < need[g] else "extra_ids",
            f"id {preview(first)} has {int(have[g]):,} row(s) in the file, expected {int(need[g]):,}: a ranked "
            "file lists every row of each group once, best first",
        )
    pos = np.empty(n, dtype=np.int64)
    pos[np.argsort(want, kind="stable")] = np.argsort(got, kind="stable")
    return pos


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


def predictions(
    sub: pd.DataFrame, columns: list[str], metric: Metric, id_column: str, known: Collection[str] | None = None
) -> list[Any]:
    """Each prediction column checked and converted for ``metric``; raises SubmissionError.
    ``known``: the labels a label metric's predictions must be among (None: not checked)."""
    kind = metric.prediction
    if kind in ("ranked_list", "label_set"):  # space-separated tokens; an empty list is allowed (scores 0)
        return [_ranked_lists(sub, c, id_column, ranked=kind == "ranked_list") for c in columns]
    if kind == "label" and metric.free_text:  # any text, an empty one too
        return [sub[c].to_numpy() for c in columns]
    if kind == "label":
        return [_labels(sub, c, id_column, metric.truth == "integer", known) for c in columns]
    unit = kind in ("probability", "class_probabilities")
    return [_floats(sub, c, id_column, unit) for c in columns]


def _ranked_lists(sub: pd.DataFrame, column: str, id_column: str, ranked: bool = True) -> list[list[str]]:
    """A column of space-separated ranked lists (or, not ``ranked``, label sets); a list that
    names an item twice is refused (``duplicate_item``): the metric would score the repeat as
    nothing, which hides the bug (a join that multiplied rows, an unfinished dedup) behind a
    merely lower score."""
    lists = [s.split() for s in sub[column].tolist()]
    for i, items in enumerate(lists):
        if len(set(items)) == len(items):
            continue
        item = next(x for j, x in enumerate(items) if x in items[:j])
        what, fix = (
            ("ranked list", "list each item once, best first") if ranked else ("label set", "name each label once")
        )
        raise fail(
            "duplicate_item",
            f"{_where(sub, i, column, id_column)}: the {what} names {preview(item)} more than once; {fix}",
        )
    return lists


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
