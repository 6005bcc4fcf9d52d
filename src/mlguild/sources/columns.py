"""What a labelled CSV's columns are: its id column, its task type, a column of lists, the item
column of a grouped ranking, the positive label, the metric a task type gets by default, and
the prediction columns a test file keeps empty.

Each guess is a starting point written into task.yaml, where the user can change it.
"""

from __future__ import annotations

import re

import pandas as pd

from ..core.errors import TaskError
from ..metrics import metric_name

_ID_NAME = re.compile(r"^(id|.*[_ ]id|.*Id|ID|index|row_?id)$", re.IGNORECASE)
_MAX_CLASSES_AS_CLASSIFICATION = 30


def id_candidates(columns: list[str], target: str) -> list[str]:
    """The columns whose names look like an id's, in their order."""
    return [col for col in columns if col != target and _ID_NAME.match(col)]


def infer_id_column(frame: pd.DataFrame, target: str) -> str | None:
    """A column whose name looks like an id and whose values are unique, else None."""
    for col in id_candidates([str(c) for c in frame.columns], target):
        if frame[col].is_unique and (frame[col] != "").all():
            return col
    return None


def infer_task_type(target: pd.Series) -> str:
    # Every question below is one of the distinct values: ten million labels as Python
    # numbers took a gigabyte.
    distinct = pd.Series(target[target != ""].unique())
    numeric = pd.to_numeric(distinct, errors="coerce")
    n_unique = len(distinct)
    if n_unique < 2:
        raise TaskError(f"target {target.name!r} has a single value: nothing to learn", "pass the right --target")
    if n_unique == 2:
        return "binary"
    if numeric.notna().all():
        is_integer = (numeric == numeric.round()).all()
        if is_integer and n_unique <= _MAX_CLASSES_AS_CLASSIFICATION:
            return "multiclass"
        return "regression"
    if n_unique <= _MAX_CLASSES_AS_CLASSIFICATION:
        return "multiclass"
    raise TaskError(
        f"target {target.name!r} has {n_unique} distinct text values: too many classes to guess a task type",
        "pass --task-type and --metric explicitly",
    )


def holds_lists(values: pd.Series) -> bool:
    """Whether a column holds space-separated lists (most of its non-empty values have a space)."""
    filled = values[values != ""].astype(str)
    return bool(len(filled)) and float(filled.str.strip().str.contains(" ").mean()) >= 0.5


def holds_words(values: pd.Series) -> bool:
    """Whether a column holds words rather than numbers: most of its non-empty values are not
    numbers (a phrase, a name; ``answer_text`` beside ``answer_start``)."""
    filled = values[values != ""].astype(str)
    return bool(len(filled)) and float(pd.to_numeric(filled, errors="coerce").isna().mean()) > 0.5


def holds_label_sets(values: pd.Series) -> bool:
    """Whether a column holds sets of labels, space-separated (``scab frog_eye_leaf_spot``,
    ``147 616 813``): at least one filled value in 20 names two or more; no value names a label
    twice; the labels are a vocabulary (at most half as many distinct labels as filled values,
    or 20), not free text; and they recombine: of the distinct values naming several, at least
    half have every label in another value too. Class names with spaces (``Sugar beet``,
    ``Common wheat``) keep their words together, so they are one label each."""
    filled = values[values != ""].astype(str).str.split()
    if filled.empty or (filled.str.len() >= 2).mean() < 0.05:
        return False
    if (filled.map(lambda labels: len(set(labels))) != filled.str.len()).any():
        return False
    if int(filled.explode().nunique()) > max(20, len(filled) // 2):
        return False
    distinct = {frozenset(labels) for labels in filled}
    values_of = pd.Series([label for labels in distinct for label in labels]).value_counts()
    several = [labels for labels in distinct if len(labels) >= 2]
    return sum(all(values_of[label] >= 2 for label in labels) for labels in several) >= len(several) / 2


def infer_item_column(frame: pd.DataFrame, group: str, target: str) -> str | None:
    """The column naming the item of a (group, item) row: unique within every group and
    repeating across groups; of several, the one with the fewest distinct values. None if none is."""
    found = []
    for col in frame.columns:
        if col in (group, target) or (frame[col] == "").any():
            continue
        values = frame[col]
        if values.nunique() < len(frame) and not frame.duplicated(subset=[group, col]).any():
            found.append((values.nunique(), str(col)))
    return min(found)[1] if found else None


def with_cutoff(metric: str) -> tuple[str, dict]:
    """``map@5`` / ``ndcg@5``: the metric and its k; otherwise the metric and no params."""
    base, at, k = metric.rpartition("@") if "@" in metric else (metric, "", "")
    if at and k.strip().isdigit() and base.strip():
        return metric_name(f"{base.strip()}@k", "--metric"), {"k": int(k)}
    return metric_name(metric, "--metric"), {}


# ``--metric "mae where u_out=0"``: the metric, and the rows it scores.
_WHERE = re.compile(r"^(?P<metric>.+?)\s+where\s+(?P<rows>.+)$", re.IGNORECASE)
_EQUALS = re.compile(r"^\s*(?P<column>[^=\s][^=]*?)\s*==?\s*(?P<value>.+?)\s*$")


def metric_with_params(text: str) -> tuple[str, dict]:
    """``--metric`` as given: a registered name or ``map@5`` (the metric and its k), either
    followed by ``where COLUMN=VALUE[, COLUMN=VALUE]``: only the rows whose input columns hold
    those values are scored (``metric_params.scored_rows``, as a grader that leaves rows out)."""
    found = _WHERE.match(text.strip())
    name, params = with_cutoff(found["metric"] if found else text)
    if found:
        params["scored_rows"] = _scored_rows(found["rows"], text)
    return name, params


def _scored_rows(text: str, given: str) -> dict:
    rows: dict = {}
    for part in re.split(r"\s*,\s*|\s+and\s+", text.strip(), flags=re.IGNORECASE):
        found = _EQUALS.match(part)
        if found is None:
            raise TaskError(
                f"--metric {given!r}: cannot read {part!r} as COLUMN=VALUE",
                'name the scored rows as --metric "NAME where COLUMN=VALUE" (several joined by commas)',
            )
        rows[found["column"].strip("'\"")] = _plain_value(found["value"].strip("'\""))
    return rows


def _plain_value(text: str) -> int | float | str:
    """A number where the text is one (so ``0`` matches a column's ``0.0``), else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def default_metric(task_type: str) -> str:
    return {"binary": "roc_auc", "multiclass": "logloss", "regression": "rmse"}[task_type]


def positive_label(target: pd.Series) -> str:
    labels = sorted(target[target != ""].unique(), key=str)
    for preferred in ("1", "yes", "Yes", "true", "True", "positive"):
        if preferred in labels:
            return preferred
    # The rarer class is usually the one of interest (churners, frauds, survivors).
    return str(target.value_counts().idxmin())


def blank_predictions(predicted: list[str], test: pd.DataFrame, train_columns: list[str]) -> list[str]:
    """The sample's prediction columns that the test file holds empty on every row read, as train
    columns: a test file that keeps the target's column, blank. They are left out of the test
    file (they hold nothing, and a target column in the test file is refused as a leak)."""
    return [
        c
        for c in predicted
        if c in test.columns and c in train_columns and not (test[c].fillna("").astype(str).str.strip() != "").any()
    ]
