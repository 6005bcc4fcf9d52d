"""What a task's rows must satisfy before the firewall splits them, each refusal one line and its
fix: ids present (and unique unless the task says they repeat), labels the harness can score,
and no input column that is a copy of a target."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..task.folder import Task
from ..util.exact_csv import read_csv_exact
from .copies import comparable, copied_columns

_FIRST_ROWS = 2_000  # the rows every column is compared on before any is read whole


def check_labels(train: pd.DataFrame, task: Task) -> None:
    """Labels the harness can score: no empty targets; for classification at least two classes,
    and the positive label and class columns of task.yaml among the labels really present."""
    spec = task.spec
    for col in spec.target_columns:
        empty = int((train[col].str.strip() == "").sum())
        if empty:
            raise TaskError(
                f"{empty} rows of {task.train_path} have an empty {col!r}",
                "remove those rows (or fill them) before running",
            )
    if spec.task_type not in ("binary", "multiclass"):
        return
    for col in spec.target_columns[1:]:  # several label columns (multi-label): each needs both labels
        if train[col].nunique() < 2:
            raise TaskError(
                f"the label column {col!r} has a single value ({train[col].iloc[0]!r}): nothing to learn",
                f"remove {col!r} from target_columns and submission_columns in {task.root}/task.yaml",
            )
    labels = sorted(train[spec.target_columns[0]].unique())
    shown = ", ".join(repr(x) for x in labels[:10])
    if len(labels) < 2:
        raise TaskError(
            f"the target {spec.target_columns[0]!r} has a single value ({shown}): nothing to learn",
            "check the target column",
        )
    if spec.positive_label is not None and spec.positive_label not in labels:
        raise TaskError(
            f"positive_label {spec.positive_label!r} is not among the labels ({shown})",
            f"set positive_label in {task.root}/task.yaml to one of them",
        )
    if spec.classes and set(labels) - set(spec.classes):
        raise TaskError(
            f"labels {sorted(set(labels) - set(spec.classes))[:10]} are not in classes {spec.classes}",
            f"list every class in {task.root}/task.yaml",
        )


def check_ids(frame: pd.DataFrame, id_column: str, path: Path, unique: bool) -> None:
    """Every row has an id; unique ones unless the task says ids repeat (a ranking's)."""
    ids = frame[id_column]
    if (ids == "").any():
        raise TaskError(f"{path} has {(ids == '').sum()} rows with an empty id", f"give every row of {path} an id")
    if unique and ids.duplicated().any():
        dupes = ids[ids.duplicated()].unique()[:5].tolist()
        raise TaskError(
            f"ids in {path} are not unique (e.g. {dupes})",
            "fix the duplicates, or set ids_unique: false in task.yaml for ranking-style data",
        )


def no_copy_of_the_target(train: pd.DataFrame, task: Task) -> None:
    """Refuse a task whose own inputs hold a copy of a target (the same value in every labelled
    row, under another name): a model would copy it, the holdout would keep no secret, and
    the verifier would rightly refuse the workspace later. Said now, as the data's problem.

    ``train`` holds the targets and may hold only some of the other columns: every column is
    compared on the file's first rows, and only those that agree there are read whole."""
    spec = task.spec
    skip = {spec.id_column, *spec.target_columns}
    head = read_csv_exact(task.train_path, nrows=_FIRST_ROWS)
    for target in spec.target_columns:
        if comparable(train[target]).nunique() < 2:
            continue
        copies = copied_columns(head, head[target], skip=skip)
        if copies and len(train) > len(head):
            whole = train if set(copies) <= set(train.columns) else read_csv_exact(task.train_path, usecols=copies)
            copies = copied_columns(whole[copies], train[target].reset_index(drop=True))
        if copies:
            raise TaskError(
                f"{task.train_path}: column {copies[0]!r} equals the target {target!r} in every "
                "labelled row, so the task gives its answers away",
                f"remove {copies[0]!r} from the train and test files in {task.public_dir}, or choose another target",
            )
