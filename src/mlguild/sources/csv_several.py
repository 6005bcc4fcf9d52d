"""A task folder from a labelled CSV with several target columns (``--target a,b,c``).

Several numeric targets make a regression task scored by the mean column-wise RMSE (MCRMSE);
several columns holding the same two labels make a multi-label task scored by the mean
column-wise ROC AUC over one probability column per label. The submission has one column per
target, in the order given. Everything else (the id column, the test split, the files written)
is what a one-target CSV gets (``csv_source.build_from_csv``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..core.suggest import closest, did_you_mean, listing
from ..metrics import get_metric, metric_name
from ..task.folder import TaskSpec
from .columns import infer_id_column
from .csv_source import _TEXT_MEAN_LENGTH, _read
from .layout import prepare_dest, split_test, write_task

_POSITIVE_PAIRS = (("0", "1"), ("False", "True"), ("false", "true"), ("no", "yes"), ("No", "Yes"))


def split_targets(target: str) -> list[str]:
    """``"a, b,c"`` as ``["a", "b", "c"]``; a TaskError for an empty or repeated name."""
    names = [t.strip() for t in target.split(",")]
    if any(not n for n in names):
        raise TaskError(f"--target {target!r} has an empty column name", "pass --target a,b,c (no empty names)")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TaskError(f"--target names {repeated} more than once", "name each target column once")
    return names


def several_task_type(train: pd.DataFrame, targets: list[str]) -> str:
    """binary when every target column holds the same two labels (multi-label), regression
    when every one is numeric; a TaskError otherwise."""
    labels = [set(train[t][train[t] != ""]) for t in targets]
    if all(len(found) <= 2 for found in labels) and len(set().union(*labels)) == 2:
        return "binary"
    numeric = [t for t in targets if pd.to_numeric(train[t][train[t] != ""], errors="coerce").notna().all()]
    if len(numeric) == len(targets):
        return "regression"
    other = [t for t in targets if t not in numeric]
    raise TaskError(
        f"the target columns {other[:6]} are not numeric, and the targets do not share two labels: "
        "several targets are either all numeric (regression) or all the same two labels (multi-label)",
        "pass one target column (--target COLUMN), or numeric / two-label target columns",
    )


def shared_positive(train: pd.DataFrame, targets: list[str]) -> str:
    labels = set().union(*(set(train[t][train[t] != ""]) for t in targets))
    for neg, pos in _POSITIVE_PAIRS:
        if labels == {neg, pos}:
            return pos
    return sorted(labels)[-1]


def build_several_from_csv(
    train_path: Path,
    dest: Path,
    target: str,
    test: str | Path | None = None,
    id_column: str | None = None,
    task_type: str | None = None,
    metric: str | None = None,
    name: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Build a task folder whose targets are the columns ``target`` names, comma-separated.
    Without a test file, 20% of the rows become the test set."""
    targets = split_targets(target)
    train = _read(Path(train_path), "train")
    columns = [str(c) for c in train.columns]
    for t in targets:
        if t not in train.columns:
            guess = closest(t, columns)
            raise TaskError(
                f"{train_path} has no column {t!r}{did_you_mean(t, columns)} (its {len(columns)} columns: "
                f"{listing(columns)})",
                f"pass --target {','.join(guess if n == t else n for n in targets)}"
                if guess is not None
                else "pass --target with columns of the file",
            )
    empty = [t for t in targets if (train[t] == "").all()]
    if empty:
        raise TaskError(f"target column(s) {empty} are empty", "pass the right --target")
    train = train[(train[targets] != "").all(axis=1)].reset_index(drop=True)
    if task_type is not None and task_type not in ("binary", "regression"):
        raise TaskError(
            f"--task-type {task_type!r} does not apply to several targets",
            "pass --task-type regression (numeric targets) or binary (two-label targets), or leave it out",
        )
    task_type = task_type or several_task_type(train, targets)
    metric = metric_name(metric, "--metric") if metric is not None else None
    metric = metric or ("mean_columnwise_roc_auc" if task_type == "binary" else "mcrmse")
    kind = get_metric(metric).prediction
    if kind not in ("value", "probability", "label"):
        raise TaskError(
            f"metric {metric!r} scores {kind.replace('_', ' ')}, not one column per target",
            "pass a column-wise metric, e.g. --metric mcrmse or --metric mean_columnwise_roc_auc",
        )

    test_frame = _read(Path(test), "test") if test else None
    id_column = id_column or infer_id_column(train, targets[0])
    if id_column is None:
        taken = set(train.columns) | set(test_frame.columns if test_frame is not None else [])
        id_column = next(n for n in ("id", "row_id", *(f"row_id_{i}" for i in range(1, 1000))) if n not in taken)
        train.insert(0, id_column, [str(i) for i in range(1, len(train) + 1)])
        if test_frame is not None:
            test_frame.insert(0, id_column, [str(i) for i in range(len(train) + 1, len(train) + 1 + len(test_frame))])
    elif id_column not in train.columns:
        raise TaskError(f"id column {id_column!r} is not in {train_path}", "pass an existing column to --id")
    if id_column in targets:
        raise TaskError(f"the id column {id_column!r} is also a target", "pass another --id, or other --target columns")

    kwargs: dict = dict(
        name=name or Path(train_path).stem,
        task_type=task_type,
        metric=metric,
        id_column=id_column,
        target_columns=targets,
        submission_columns=[id_column, *targets],
        source=f"csv:{Path(train_path).resolve()}",
    )
    if task_type == "binary":
        kwargs["positive_label"] = shared_positive(train, targets)
    skip = {id_column, *targets}
    text_cols = [c for c in train.columns if c not in skip and train[c].str.len().mean() >= _TEXT_MEAN_LENGTH]
    if text_cols:
        kwargs.update(text_columns=text_cols, modality="text")
    try:
        spec = TaskSpec(**kwargs)
    except ValueError as exc:
        raise TaskError(
            f"cannot build a task from {train_path}: {exc}", "pass --task-type/--metric explicitly"
        ) from exc

    if test_frame is None:
        train, test_frame = split_test(train, 0.2, 0, None)
    answers = None
    if all(t in test_frame.columns for t in targets):
        answers = test_frame[[id_column, *targets]]
    test_frame = test_frame.drop(columns=[t for t in targets if t in test_frame.columns])
    dest = prepare_dest(dest, overwrite)
    what = "multi-label: one probability column per label" if task_type == "binary" else "regression"
    description = (
        f"# {spec.name}\n\nPredict the {len(targets)} columns {', '.join(f'`{t}`' for t in targets)} ({what}) "
        f"from the other columns of `{Path(train_path).name}`.\nMetric: {metric} (each column scored, then "
        "averaged).\n"
    )
    return write_task(dest, spec, description, train, test_frame, answers)
