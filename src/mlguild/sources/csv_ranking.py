"""A ranking task from a labelled CSV: rows ranked within groups (``--group``), or a
space-separated ranked list per row (MAP@k)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..core.suggest import did_you_mean
from ..metrics import get_metric
from ..task.folder import TaskSpec
from .columns import holds_lists, infer_id_column, infer_item_column, positive_label, with_cutoff
from .layout import prepare_dest, split_test, split_test_groups, write_task


def build_ranking(
    train: pd.DataFrame,
    test_frame: pd.DataFrame | None,
    train_path: Path,
    dest: Path,
    target: str,
    test: str | Path | None,
    group: str | None,
    metric: str | None,
    name: str | None,
    overwrite: bool,
    id_column: str | None = None,
) -> Path:
    """A ranking task: grouped (``group`` given; the group is the id column, ids repeat, the item
    within a group is a key column) or a list per row (a target of space-separated items, MAP@k)."""
    source = f"csv:{train_path.resolve()}"
    if group is None:
        if not holds_lists(train[target]):
            raise TaskError(
                f"--task-type ranking needs --group COLUMN (the column whose rows are ranked against each other), "
                f"or a target of space-separated lists; {target!r} holds single values",
                "pass --group COLUMN",
            )
        metric_name_, params = with_cutoff(metric or "map@k")
        if get_metric(metric_name_).prediction != "ranked_list":
            raise TaskError(
                f"{target!r} holds lists; metric {metric_name_} does not score lists", "pass --metric map@K"
            )
        params.setdefault("k", 10)
        return _write(
            train, test_frame, train_path, dest, test, overwrite,
            dict(name=name or train_path.stem, task_type="ranking", metric=metric_name_, metric_params=params,
                 id_column=id_column or _id_for(train, target), target_columns=[target], source=source),
        )  # fmt: skip
    if group not in train.columns:
        raise TaskError(
            f"{train_path} has no column {group!r}{did_you_mean(group, [str(c) for c in train.columns])}",
            "pass --group with one of its columns",
        )
    if group == target:
        raise TaskError("the group column cannot also be the target", "pass --group and --target two different columns")
    if test_frame is not None and group not in test_frame.columns:
        raise TaskError(f"the test file {test} has no group column {group!r}", "add it, or pass the right --group")
    item = infer_item_column(train, group, target)
    if item is None:  # no column names the item: a row number does (unique, so rows are checked one by one)
        item = next(n for n in ("item", "row", *(f"row_{i}" for i in range(1, 1000))) if n not in train.columns)
        train.insert(1, item, [str(i) for i in range(1, len(train) + 1)])
        if test_frame is not None:
            test_frame.insert(1, item, [str(i) for i in range(len(train) + 1, len(train) + 1 + len(test_frame))])
    metric_name_, params, positive = ranking_metric(metric, train[target])
    spec = dict(
        name=name or train_path.stem, task_type="ranking", metric=metric_name_, metric_params=params,
        id_column=group, ids_unique=False, key_columns=[item], target_columns=[target],
        submission_columns=[group, item, target], positive_label=positive, source=source,
    )  # fmt: skip
    return _write(train, test_frame, train_path, dest, test, overwrite, spec)


def ranking_metric(metric: str | None, target: pd.Series) -> tuple[str, dict, str | None]:
    """(metric, metric params, positive label) of a grouped ranking: nDCG@10 by default (a
    relevance grade per row); a text target of two labels has no grades, so GAUC with its
    positive label. ``name@N`` (``ndcg@5``) sets the cut-off."""
    name, params = with_cutoff(metric) if metric else ("", {})
    numeric = pd.to_numeric(target[target != ""], errors="coerce").notna().all()
    positive = None
    if not numeric:
        if target[target != ""].nunique() != 2:
            raise TaskError(
                f"the ranking target {target.name!r} is neither numbers (relevance grades) nor two labels",
                "pass a target of 0/1 or graded relevance numbers",
            )
        positive = positive_label(target)
        if name and name != "gauc":
            raise TaskError(
                f"metric {name} needs numeric relevance; {target.name!r} holds labels", "pass --metric gauc"
            )
        return "gauc", {}, positive
    name = name or "ndcg_at_k"
    if name == "ndcg_at_k":
        params.setdefault("k", 10)
    return name, params, positive


def _id_for(train: pd.DataFrame, target: str) -> str:
    found = infer_id_column(train, target)
    if found is None:
        raise TaskError("a list per row needs a unique id column for its rows", "add one, or pass --id COLUMN")
    return found


def _write(
    train: pd.DataFrame,
    test_frame: pd.DataFrame | None,
    train_path: Path,
    dest: Path,
    test: str | Path | None,
    overwrite: bool,
    spec_kwargs: dict,
) -> Path:
    spec_kwargs.setdefault("submission_columns", [spec_kwargs["id_column"], *spec_kwargs["target_columns"]])
    try:
        spec = TaskSpec(**spec_kwargs)
    except ValueError as exc:
        raise TaskError(
            f"cannot build a task from {train_path}: {exc}", "pass --task-type/--metric explicitly"
        ) from exc
    target = spec.target_columns[0]
    if test_frame is None:
        if spec.ids_unique:
            train, test_frame = split_test(train, 0.2, 0, None)
        else:
            train, test_frame = split_test_groups(train, spec.id_column, 0.2, 0)
    answers = None
    if target in test_frame.columns:
        answers = test_frame[[spec.id_column, *spec.key_columns, target]]
        test_frame = test_frame.drop(columns=[target])
    dest = prepare_dest(dest, overwrite)
    how = f"ranked within each {spec.id_column}" if not spec.ids_unique else "a space-separated ranked list per row"
    description = (
        f"# {spec.name}\n\nRank by `{target}` ({how}) from the other columns of `{train_path.name}`.\n"
        f"Metric: {spec.metric} {spec.metric_params or ''}.\n"
    )
    return write_task(dest, spec, description, train, test_frame, answers)
