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
from ..util.csv_split import RowsOut, split_rows
from ..util.exact_csv import read_csv_exact, select_rows
from ..util.frames import mean_lengths
from .columns import (
    default_metric,
    id_candidates,
    infer_id_column,
    infer_task_type,
    metric_with_params,
    positive_label,
)
from .csv_ranking import build_ranking
from .layout import finish_task, prepare_dest, test_rows, test_rows_by_time
from .tables import sniff_separator

_TEXT_MEAN_LENGTH = 30
_SAMPLE_ROWS = 20_000  # the file's first rows, which tell the columns of dates and of text


def _read(path: Path, what: str) -> pd.DataFrame:
    """A whole CSV as exact strings (a grouped ranking's, several targets'), after ``_head``'s
    checks; the task's own files are written with commas."""
    return _head(path, what, None)[0]


def _head(path: Path, what: str, rows: int | None) -> tuple[pd.DataFrame, str]:
    """The first ``rows`` rows of a CSV (None: all) as exact strings, and its separator; a
    TaskError naming the fix for a missing file, one with no data rows, or one whose rows are a
    single column."""
    if not path.exists():
        raise TaskError(f"{what} file {path} does not exist", "check the path")
    sep = sniff_separator(path)
    head = read_csv_exact(path, sep, nrows=rows)
    if head.empty:
        raise TaskError(f"{what} file {path} has no data rows", "use a CSV with a header and data rows")
    if len(head.columns) < 2:
        raise TaskError(
            f"{what} file {path} has a single column {list(head.columns)[:1]}; is it separated by ';' or tabs?",
            "save it as a comma-separated CSV",
        )
    return head, sep


def _test_header(path: Path) -> tuple[list[str], str]:
    """The columns of a test CSV and its separator (after the checks of ``_head``)."""
    head, sep = _head(path, "test", 1)
    return [str(c) for c in head.columns], sep


def _labelled(frame: pd.DataFrame, target: str) -> pd.DataFrame:
    """The rows of ``frame`` whose ``target`` is filled; a TaskError where none is."""
    unlabelled = (frame[target] == "").to_numpy(dtype=bool)
    if unlabelled.all():
        raise TaskError(f"target column {target!r} is empty", "pass the right --target")
    if unlabelled.any():  # (a copy of the whole table only where rows are dropped)
        frame = frame[~unlabelled].reset_index(drop=True)
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
    about time.

    A table of ten million rows never sits in memory whole (a grouped ranking's does): the
    decisions read the columns they need (the target, the columns named like ids, the dates) and
    the file's first rows (which columns are dates, which text), and the task's train and test
    files are written a block at a time."""
    if not target:
        raise TaskError("which column is the target?", f"add --target COLUMN (columns: see the header of {train_path})")
    train_path = Path(train_path)
    head, sep = _head(train_path, "train", _SAMPLE_ROWS)
    header = [str(c) for c in head.columns]
    if target not in header:
        guess = closest(target, header)
        raise TaskError(
            f"{train_path} has no column {target!r}{did_you_mean(target, header)} "
            f"(its {len(header)} columns: {listing(header)})",
            f"pass --target {guess}" if guess is not None else "pass --target with one of its columns",
        )
    if group is not None and task_type not in (None, "ranking"):
        raise TaskError(
            f"--group names the groups of a ranking task, not of a {task_type} one",
            "pass --task-type ranking, or leave --group out",
        )
    if group is not None or task_type == "ranking":
        train = _labelled(_read(train_path, "train"), target)
        test_frame = _read(Path(test), "test") if test else None
        return build_ranking(
            train, test_frame, train_path, dest, target, test, group, metric, name, overwrite, id_column
        )
    test_path = Path(test) if test else None
    test_header, test_sep = ([], ",") if test_path is None else _test_header(test_path)
    if id_column is not None and id_column not in header:
        raise TaskError(f"id column {id_column!r} is not in {train_path}", "pass an existing column to --id")
    if time_column is not None:
        _check_time_column(time_column, header)
    dates = date_columns(head, [target])  # judged on a sample; read in full below
    keep = list(dict.fromkeys([target, *id_candidates(header, target), *([id_column] if id_column else []), *dates]))
    if time_column is not None:
        keep = list(dict.fromkeys([*keep, time_column]))
    columns = read_csv_exact(train_path, sep, usecols=keep)  # every row of these alone
    labelled = (columns[target] != "").to_numpy(dtype=bool)
    if not labelled.any():
        raise TaskError(f"target column {target!r} is empty", "pass the right --target")
    decided = columns if labelled.all() else select_rows(columns, labelled)

    numbered = None  # the name of the row-number column added as the id, where no column is one
    id_column = id_column or infer_id_column(decided, target)
    if id_column is None:
        # A new column of row numbers; the name is free in both files ("id" may be taken by a
        # column that repeats, e.g. a subject seen several times).
        taken = set(header) | set(test_header)
        id_column = numbered = next(
            name for name in ("id", "row_id", *(f"row_id_{i}" for i in range(1, 1000))) if name not in taken
        )
    elif test_path is not None and id_column not in test_header:
        raise TaskError(
            f"the test file {test_path} has no id column {id_column!r}", f"add it to {test_path.name}, or pass --id"
        )

    if task_type is not None and task_type not in (*TASK_TYPES, "ranking"):
        raise TaskError(
            f"--task-type {task_type!r} is not one of {', '.join(TASK_TYPES)}{did_you_mean(task_type, TASK_TYPES)}",
            _task_type_fix(task_type),
        )
    metric_params: dict = {}
    if metric is not None:
        metric, metric_params = metric_with_params(metric)
    task_type = task_type or infer_task_type(decided[target])
    metric = metric or default_metric(task_type)
    classes = sorted(decided[target].unique(), key=str) if task_type in ("binary", "multiclass") else None
    test_times = None
    if test_path is not None:
        in_test = [c for c in dict.fromkeys([*dates, *([time_column] if time_column else [])]) if c in test_header]
        test_times = read_csv_exact(test_path, test_sep, usecols=in_test) if in_test else pd.DataFrame()
    time_column, time_notes = _time_column(decided, test_times, time_column, [target, id_column])
    for note in time_notes:
        (say or _quiet)(note)
    spec_kwargs = dict(
        time_column=time_column,
        name=name or train_path.stem,
        task_type=task_type,
        metric=metric,
        id_column=id_column,
        target_columns=[target],
        metric_params=metric_params,
        source=f"csv:{train_path.resolve()}",
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
        spec_kwargs["positive_label"] = positive_label(decided[target])
    sample = head[(head[target] != "").to_numpy(dtype=bool)]  # the first labelled rows
    lengths = mean_lengths(sample, [c for c in sample.columns if c not in (target, id_column)])
    text_cols = [str(c) for c, length in lengths.items() if length >= _TEXT_MEAN_LENGTH]
    if text_cols:
        spec_kwargs.update(text_columns=text_cols, modality="text")
    try:
        spec = TaskSpec(**spec_kwargs)
    except ValueError as exc:
        raise TaskError(
            f"cannot build a task from {train_path}: {exc}", "pass --task-type/--metric explicitly"
        ) from exc

    held = None  # with no test file, the labelled rows that become the test rows
    if test_path is None:
        if time_column is not None:
            held = test_rows_by_time(decided, 0.2, time_column)
        else:
            held = test_rows(decided, 0.2, 0, target if task_type in ("binary", "multiclass") else None)
    description = (
        f"# {spec.name}\n\nPredict `{target}` ({task_type}) from the other columns of `{train_path.name}`.\n"
        f"Metric: {metric}.\n"
    )
    if time_column is not None:
        description += f"\nThe rows are ordered in time by `{time_column}`: the test rows come after the train rows.\n"
    for path, used in [(train_path, sep), *([(test_path, test_sep)] if test_path is not None else [])]:
        if used != ",":
            description += f"\n`{path.name}` was separated by {used!r}; the task's copy uses commas.\n"
    dest = prepare_dest(dest, overwrite)
    test_keys = _write_tables(dest, spec, train_path, sep, labelled, held, test_path, test_sep, test_header, numbered)
    train_labels = decided[[target]] if held is None else select_rows(decided[[target]], ~held)
    answers = test_keys[[id_column, target]] if target in test_keys.columns else None
    return finish_task(dest, spec, description, test_keys, train_labels, answers)


def _write_tables(
    dest: Path,
    spec: TaskSpec,
    train_path: Path,
    sep: str,
    labelled: np.ndarray,
    held: np.ndarray | None,
    test_path: Path | None,
    test_sep: str,
    test_header: list[str],
    numbered: str | None,
) -> pd.DataFrame:
    """Write the task's train and test files a block at a time: the labelled rows of the train
    file, less the ``held`` ones, which become the test rows when there is no test file (their
    target goes to the answers); return the test rows' id, key and target columns. ``numbered``:
    the name of the row-number id column each file gets first (train rows from 1, then the
    test rows)."""
    target, public = spec.target_columns[0], dest / "public"
    wanted = (spec.id_column, *spec.key_columns, target)
    train_rows = labelled
    outputs = []
    if held is not None:
        test_rows = np.zeros(len(labelled), dtype=bool)
        test_rows[labelled] = held
        train_rows = labelled & ~test_rows
        outputs.append(RowsOut(public / spec.test_file, test_rows, drop=(target,), take=wanted))
    outputs.insert(0, RowsOut(public / spec.train_file, train_rows))
    taken = split_rows(train_path, outputs, sep, None if numbered is None else (numbered, 1))
    if test_path is None:
        return taken[1]
    labels = (target,) if target in test_header else ()
    test = RowsOut(public / spec.test_file, drop=labels, take=(spec.id_column, *spec.key_columns, *labels))
    first = int(labelled.sum()) + 1
    return split_rows(test_path, [test], test_sep, None if numbered is None else (numbered, first))[0]


def _quiet(line: str) -> None:
    """Say nothing (the default for library callers)."""


def _check_time_column(named: str, header: list[str]) -> None:
    """A TaskError naming the fix where ``--time-column`` names no column of the train file."""
    if named not in header:
        raise TaskError(
            f"--time-column {named!r} is not a column of the train file{did_you_mean(named, header)}",
            f"pass --time-column with one of its columns ({listing(header)})",
        )


def _time_column(
    train: pd.DataFrame, test: pd.DataFrame | None, named: str | None, skip: list[str]
) -> tuple[str | None, list[str]]:
    """(the task's time column or None, the notes that say why). A named one must be a column
    of dates in every row; otherwise one is inferred when a test file comes after the train
    file in a date column. A single file gives no such evidence: a date column is pointed out,
    and used only when named."""
    if named is not None:
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
