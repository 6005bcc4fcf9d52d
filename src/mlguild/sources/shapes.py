"""What a competition folder's shape says beyond one target column: several targets (their
task type, default metric and positive label) and a grouped ranking (ids that repeat in the
sample submission). ``mlguild.sources.infer`` asks these when the sample submission shows it."""

from __future__ import annotations

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


def ranking_shape(
    sample: pd.DataFrame, id_column: str, predicted: list[str], test_header: list[str]
) -> tuple[list[str], str] | None:
    """(key columns, score column) when the sample submission's ids repeat: a grouped ranking,
    whose prediction columns found in the test file name the item and the one other holds the
    score; None when ids do not repeat. A repeat with no single score column is an error."""
    if not sample[id_column].duplicated().any():
        return None
    keys = [c for c in predicted if c in test_header]
    scores = [c for c in predicted if c not in keys]
    if len(scores) != 1:
        raise TaskError(
            f"ids repeat in the sample submission (a ranking), but its columns {predicted[:6]} hold "
            f"{len(scores)} score columns besides the item columns {keys[:6]} found in the test file",
            "write task.yaml by hand with ids_unique: false and key_columns (see docs/guides/shapes.md, 'Ranking tasks')",
        )
    return keys, scores[0]
