"""What a competition folder's shape says beyond one target column: several targets (their
task type, default metric and positive label) and a grouped ranking (ids that repeat in the
sample submission, or columns it copies from the test file: ``key_shape``).
``mlguild.sources.infer`` asks these when the sample submission shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from ..core.errors import TaskError


def numeric_share(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values[values != ""], errors="coerce")


def sample_is_probability(sample: pd.DataFrame, column: str) -> bool:
    values = numeric_share(sample[column]) if column in sample else pd.Series(dtype=float)
    return bool(len(values) and values.notna().all() and values.between(0, 1).all() and (values % 1 != 0).any())


def several_task_type(train: pd.DataFrame, targets: list[str]) -> str:
    """binary (multi-label: every target column holds the same two labels) or regression
    (every target column numeric); anything else is a TaskError naming the fix."""
    labels = [frozenset(train[t][train[t] != ""]) for t in targets if t in train]
    if labels and all(len(found) <= 2 for found in labels) and len(frozenset().union(*labels)) == 2:
        return "binary"
    numeric = all(numeric_share(train[t]).notna().all() for t in targets if t in train)
    if numeric:
        return "regression"
    raise TaskError(
        f"the target columns {targets[:6]} are neither all numeric nor all the same two labels",
        "write task.yaml by hand (see docs/guides/task-folders.md), or pass --task-type",
    )


def several_default(task_type: str, sample: pd.DataFrame, targets: list[str]) -> str:
    """The column-wise metric for several targets when the description names none: MCRMSE for
    values; for labels, mean column-wise AUC when the sample holds probabilities, else micro F1."""
    if task_type != "binary":
        return "mcrmse"
    if any(sample_is_probability(sample, t) for t in targets):
        return "mean_columnwise_roc_auc"
    return "multilabel_f1_micro"


def several_positive(train: pd.DataFrame, targets: list[str], notes: list[str]) -> str:
    """The positive label shared by every label column (1 of 0/1, True of False/True)."""
    labels = sorted(set().union(*(set(train[t]) for t in targets if t in train)) - {""})
    for neg, pos in (("0", "1"), ("False", "True"), ("false", "true"), ("no", "yes")):
        if set(labels) == {neg, pos}:
            notes.append(f"positive label {pos!r} in each of the {len(targets)} label columns")
            return pos
    positive = labels[-1]
    notes.append(f"positive label {positive!r} in each label column (set positive_label in task.yaml if not)")
    return positive


# Column names that say "the rows of one of these are ranked against each other", and names
# that say "the thing ranked"; only a tie-breaker between key columns, never a reason alone.
_GROUP_NAME = re.compile(
    r"(user|query|qid|session|search|srch|group|customer|visitor|member|account|request|impression|display)",
    re.IGNORECASE,
)
_ITEM_NAME = re.compile(
    r"(item|video|product|property|prop_|hotel|doc|movie|article|offer|song|track|candidate|ad_?id)", re.IGNORECASE
)


@dataclass(frozen=True)
class KeyShape:
    """What a sample submission's key columns say: which of its columns are copied from the
    test file (``keys``), which hold the prediction (``scores``: none for a ranked file), the
    column of the groups a grouped metric ranks within, and whether ids repeat."""

    keys: list[str]
    scores: list[str]
    group_column: str | None  # None: the id is the group (ids repeat), or there is none
    ids_unique: bool

    @property
    def ranked_file(self) -> bool:
        return not self.scores

    def words(self, id_column: str, sample_name: str) -> str:
        group = self.group_column or (id_column if not self.ids_unique else None)
        what = "ids repeat" if not self.ids_unique else f"ids unique, {self.keys} copied from the test file"
        if group is None:
            return f"{sample_name}: {what}; predictions in {self.scores}"
        how = (
            "the file's order within a group is the ranking (no score column)"
            if self.ranked_file
            else (f"scores in {self.scores[0]!r}")
        )
        return f"{sample_name}: {what}; a grouped ranking within {group!r}, items {self.keys}, {how}"


def _copied(sample: pd.DataFrame, test: pd.DataFrame, column: str) -> bool:
    """Whether ``column`` of the sample submission is copied from the test file: a test column of
    that name, unless the sample holds one placeholder value there where the test's vary (a
    prediction column that shares a name with a test column)."""
    if column not in test.columns:
        return False
    return not (sample[column].nunique() <= 1 < test[column].nunique())


def _group_of(id_column: str, keys: list[str], ids_unique: bool, sample_name: str) -> str | None:
    """The column a grouped metric ranks within: the repeated id, unless its name says item and
    one key column's says group; among the key columns beside a unique id, the only one, or the
    one whose name says group (or, of two, the one whose name does not say item)."""
    named = [k for k in keys if _GROUP_NAME.search(k)]
    if not ids_unique:
        item_id = _ITEM_NAME.search(id_column) and not _GROUP_NAME.search(id_column)
        return named[0] if item_id and len(named) == 1 else None
    if len(keys) == 1:
        return keys[0]
    if len(named) == 1:
        return named[0]
    not_items = [k for k in keys if not _ITEM_NAME.search(k)]
    if len(keys) == 2 and len(not_items) == 1:
        return not_items[0]
    raise TaskError(
        f"{sample_name} has a unique id and the key columns {keys[:6]} copied from the test file, and a grouped "
        "metric: which of them holds the groups ranked within is not clear",
        f"write task.yaml with group_column: COLUMN (one of {keys[:6]}; see docs/guides/shapes.md, 'Ranking tasks')",
    )


def key_shape(
    sample: pd.DataFrame, test: pd.DataFrame, id_column: str, predicted: list[str], grouped_metric: bool | None,
    sample_name: str,
) -> KeyShape | None:  # fmt: skip
    """The key columns of a sample submission, when it has any: ids that repeat (the id is the
    group, as before), or sample columns copied from the test file beside a unique id (a row id
    with group and item columns). ``grouped_metric``: whether the metric named ranks within
    groups (None: no metric named yet). None when the sample is a plain id and predictions.
    An ambiguous folder is a TaskError naming the task.yaml line that settles it."""
    repeats = bool(sample[id_column].duplicated().any())
    keys = [c for c in predicted if _copied(sample, test, c)]
    scores = [c for c in predicted if c not in keys]
    if not repeats and not keys:
        return None
    if len(scores) > 1:
        raise TaskError(
            f"{sample_name} has the key columns {[id_column, *keys][:6]} (ids {'repeat' if repeats else 'unique'}), "
            f"but {len(scores)} columns besides them ({scores[:6]}): one score column, or none for a ranked file, "
            "is what a ranking submits",
            "write task.yaml by hand with key_columns (see docs/guides/shapes.md, 'Ranking tasks')",
        )
    if not repeats and not grouped_metric:
        if not scores:
            raise TaskError(
                f"{sample_name} holds only key columns {[id_column, *keys][:6]} (a ranked file?) but the metric "
                "named is not one that ranks within groups",
                "pass --metric ndcg@K or gauc, or write task.yaml with ranked_file: true and group_column",
            )
        return KeyShape(keys, scores, None, True)  # copied columns beside the prediction
    group = _group_of(id_column, keys, not repeats, sample_name)
    if repeats and not keys and not scores:
        raise TaskError(f"{sample_name} has repeated ids and no other column", "write task.yaml by hand")
    return KeyShape(keys, scores, group, not repeats)
