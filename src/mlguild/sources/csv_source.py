"""Turn a labelled CSV (and an optional test CSV) into a task folder.

Inference is a starting point the user can override: the id column, the task type and a
metric are guessed from the data and written into task.yaml, where they are easy to change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import TaskError
from ..core.suggest import closest, did_you_mean, listing
from ..metrics import get_metric
from ..task.folder import TaskSpec
from ..task.time_order import date_columns, infer_time_column
from ..util.exact_csv import read_csv_exact, select_rows
from ..util.frames import mean_lengths
from .columns import default_metric, infer_id_column, infer_task_type, positive_label, with_cutoff
from .csv_ranking import build_ranking
from .layout import prepare_dest, test_rows, test_rows_by_time, write_task

_TEXT_MEAN_LENGTH = 30


SEPARATORS = (",", ";", "\t", "|")


def sniff_separator(path: Path) -> str:
    """The field separator of a CSV: the one its header row holds most of (a ';'-separated
    export from a spreadsheet in a locale with decimal commas is common)."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline()
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    best = max(SEPARATORS, key=lambda sep: counts[sep])
    return best if counts[best] > counts[","] else ","


def _read(path: Path, what: str) -> pd.DataFrame:
    if not path.exists():
        raise TaskError(f"{what} file {path} does not exist", "check the path")
    frame = read_csv_exact(path, sniff_separator(path))  # the task's own files are written with commas
    if frame.empty:
        raise TaskError(f"{what} file {path} has no data rows", "use a CSV with a header and data rows")
    if len(frame.columns) < 2:
        raise TaskError(
            f"{what} file {path} has a single column {list(frame.columns)[:1]}; is it separated by ';' or tabs?",
            "save it as a comma-separated CSV",
        )
    return frame


TASK_TYPES = ("binary", "multiclass", "regression")  # what --task-type suggests; "ranking" needs --group or lists


def _task_type_fix(task_type: str) -> str:
    """The fix for an unknown --task-type."""
    if "rank" in task_type.casefold():
        return "pass --task-type ranking --group COLUMN (or --task-type ranking for a target of space-separated lists)"
    if "class" in task_type.casefold():
        return "pass --task-type binary (two classes) or multiclass, or leave it out: it is inferred from the target"
    guess = closest(task_type, TASK_TYPES)
    return f"pass --task-type {guess}" if guess else "leave --task-type out: it is inferred from the target"


def build_from_csv(
    train_path: Path,
    dest: Path,
    target: str | None = None,
    test: str | Path | None = None,
    id_column: str | None = None,
    task_type: str | None = None,
    metric: str | None = None,
    name: str | None = None,
    overwrite: bool = False,
    time_column: str | None = None,
    say: Callable[[str], None] | None = None,
    group: str | None = None,
) -> Path:
    """Build a task folder from CSV files. Without a test file, 20% of the rows become the test
    set: the latest 20% when the rows are ordered in time by ``time_column``, whole groups for a
    grouped ranking (``group`` names the column whose rows are ranked against each other; it
    becomes the task's id column), else a seeded random share. With a test file, the time column
    is inferred when none is named (see ``mlguild.task.time_order``); ``say`` hears each decision
    about time."""
    if not target:
        raise TaskError("which column is the target?", f"add --target COLUMN (columns: see the header of {train_path})")
    train = _read(Path(train_path), "train")
    if target not in train.columns:
        columns = [str(c) for c in train.columns]
        guess = closest(target, columns)
        raise TaskError(
            f"{train_path} has no column {target!r}{did_you_mean(target, columns)} "
            f"(its {len(columns)} columns: {listing(columns)})",
            f"pass --target {guess}" if guess is not None else "pass --target with one of its columns",
        )
    unlabelled = (train[target] == "").to_numpy(dtype=bool)
    if unlabelled.all():
        raise TaskError(f"target column {target!r} is empty", "pass the right --target")
    if unlabelled.any():  # (a copy of the whole table only where rows are dropped)
        train = train[~unlabelled].reset_index(drop=True)

    test_frame = _read(Path(test), "test") if test else None
    if group is not None and task_type not in (None, "ranking"):
        raise TaskError(
            f"--group names the groups of a ranking task, not of a {task_type} one",
            "pass --task-type ranking, or leave --group out",
        )
    if group is not None or task_type == "ranking":
        return build_ranking(
            train, test_frame, Path(train_path), dest, target, test, group, metric, name, overwrite, id_column
        )
    id_column = id_column or infer_id_column(train, target)
    if id_column is None:
        # A new column of row numbers; the name is free in both files ("id" may be taken by a
        # column that repeats, e.g. a subject seen several times).
        taken = set(train.columns) | set(test_frame.columns if test_frame is not None else [])
        id_column = next(
            name for name in ("id", "row_id", *(f"row_id_{i}" for i in range(1, 1000))) if name not in taken
        )
        train.insert(0, id_column, row_numbers(1, len(train)))
        if test_frame is not None:
            test_frame.insert(0, id_column, row_numbers(len(train) + 1, len(test_frame)))
    elif id_column not in train.columns:
        raise TaskError(f"id column {id_column!r} is not in {train_path}", "pass an existing column to --id")

    if task_type is not None and task_type not in (*TASK_TYPES, "ranking"):
        raise TaskError(
            f"--task-type {task_type!r} is not one of {', '.join(TASK_TYPES)}{did_you_mean(task_type, TASK_TYPES)}",
            _task_type_fix(task_type),
        )
    metric_params: dict = {}
    if metric is not None:
        metric, metric_params = with_cutoff(metric)
    task_type = task_type or infer_task_type(train[target])
    metric = metric or default_metric(task_type)
    classes = sorted(train[target].unique(), key=str) if task_type in ("binary", "multiclass") else None
    time_column, time_notes = _time_column(train, test_frame, time_column, [target, id_column])
    for note in time_notes:
        (say or _quiet)(note)
    spec_kwargs = dict(
        time_column=time_column,
        name=name or Path(train_path).stem,
        task_type=task_type,
        metric=metric,
        id_column=id_column,
        target_columns=[target],
        metric_params=metric_params,
        source=f"csv:{Path(train_path).resolve()}",
    )

    prediction = get_metric(metric).prediction
    if prediction == "class_probabilities":
        if classes is None:  # was a TypeError at *classes below
            raise TaskError(
                f"metric {metric!r} scores class probabilities; a {task_type} task has no classes",
                "pass --task-type/--metric explicitly",
            )
        spec_kwargs.update(classes=classes, submission_columns=[id_column, *classes])
    else:
        spec_kwargs["submission_columns"] = [id_column, target]
    if task_type == "binary" and prediction in ("probability", "label"):
        spec_kwargs["positive_label"] = positive_label(train[target])
    lengths = mean_lengths(train, [c for c in train.columns if c not in (target, id_column)])
    text_cols = [c for c, length in lengths.items() if length >= _TEXT_MEAN_LENGTH]
    if text_cols:
        spec_kwargs.update(text_columns=text_cols, modality="text")
    try:
        spec = TaskSpec(**spec_kwargs)
    except ValueError as exc:
        raise TaskError(
            f"cannot build a task from {train_path}: {exc}", "pass --task-type/--metric explicitly"
        ) from exc

    train_rows = None  # with no test file, the rows that stay train rows (the rest are the test rows)
    if test_frame is None:
        if time_column is not None:
            held = test_rows_by_time(train, 0.2, time_column)
        else:
            held = test_rows(train, 0.2, 0, target if task_type in ("binary", "multiclass") else None)
        test_frame, train_rows = select_rows(train, held), ~held
    answers = None
    if target in test_frame.columns:
        answers = test_frame[[id_column, target]]
        test_frame = test_frame.drop(columns=[target])
    dest = prepare_dest(dest, overwrite)
    description = (
        f"# {spec.name}\n\nPredict `{target}` ({task_type}) from the other columns of `{Path(train_path).name}`.\n"
        f"Metric: {metric}.\n"
    )
    if time_column is not None:
        description += f"\nThe rows are ordered in time by `{time_column}`: the test rows come after the train rows.\n"
    for path in [Path(train_path), *([Path(test)] if test else [])]:
        if (sep := sniff_separator(path)) != ",":
            description += f"\n`{path.name}` was separated by {sep!r}; the task's copy uses commas.\n"
    return write_task(dest, spec, description, train, test_frame, answers, train_rows)


def row_numbers(first: int, n: int) -> pd.arrays.ArrowStringArray:
    """``n`` row numbers from ``first``, as text in Arrow (ten million as Python strings took
    600 MB)."""
    import pyarrow as pa

    return pd.arrays.ArrowStringArray(pa.array(np.arange(first, first + n, dtype=np.int64)).cast(pa.string()))


def _quiet(line: str) -> None:
    """Say nothing (the default for library callers)."""


def _time_column(
    train: pd.DataFrame, test: pd.DataFrame | None, named: str | None, skip: list[str]
) -> tuple[str | None, list[str]]:
    """(the task's time column or None, the notes that say why). A named one must be a column
    of dates in every row; otherwise one is inferred when a test file comes after the train
    file in a date column. A single file gives no such evidence: a date column is pointed out,
    and used only when named."""
    if named is not None:
        if named not in train.columns:
            columns = [str(c) for c in train.columns]
            raise TaskError(
                f"--time-column {named!r} is not a column of the train file{did_you_mean(named, columns)}",
                f"pass --time-column with one of its columns ({listing(columns)})",
            )
        if named in skip:
            raise TaskError(f"--time-column {named!r} is the target or the id column", "name a column of dates")
        test_rows_by_time(train, 0.2, named)  # its values must all be dates (TaskError naming the fix)
        how = "the test set is the latest 20% of the rows" if test is None else "the test file's rows"
        return named, [
            f"time column {named!r} (--time-column): {how}; the holdout is the latest labelled rows "
            "and validation folds are ordered in time"
        ]
    if test is not None:
        return infer_time_column(train, test, skip)
    dates = date_columns(train, skip)
    if not dates:
        return None, []
    return None, [
        f"column {dates[0]!r} holds dates: if the rows are ordered in time by it, pass --time-column {dates[0]} "
        "(the test set is then the latest 20% of the rows, not a random 20%)"
    ]
