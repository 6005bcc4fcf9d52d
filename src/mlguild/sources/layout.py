"""Writing a task folder in our layout (shared by every source)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..core.errors import TaskError
from ..firewall.time_split import task_times, time_holdout
from ..firewall.workspace import split_holdout
from ..task.folder import TaskSpec, load_task
from ..util.exact_csv import select_rows, write_csv_exact


def prepare_dest(dest: Path, overwrite: bool = False) -> Path:
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and any(dest.iterdir()):
        if not overwrite:
            raise TaskError(
                f"{dest} already exists and is not empty",
                f"pass --force to overwrite it, choose another --out, or remove {dest}",
            )
        shutil.rmtree(dest)
    (dest / "public").mkdir(parents=True, exist_ok=True)
    (dest / "private").mkdir(parents=True, exist_ok=True)
    return dest


def split_test(
    frame: pd.DataFrame, fraction: float, seed: int, stratify_on: str | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded (optionally stratified) split of labelled rows into train and a test set with answers."""
    mask = test_rows(frame, fraction, seed, stratify_on)
    return frame[~mask].reset_index(drop=True), frame[mask].reset_index(drop=True)


def test_rows(frame: pd.DataFrame, fraction: float, seed: int, stratify_on: str | None) -> np.ndarray:
    """The rows ``split_test`` makes test rows (a boolean mask)."""
    labels = frame[stratify_on] if stratify_on else pd.Series(np.zeros(len(frame)))
    return split_holdout(labels, fraction, len(frame), seed, stratify=stratify_on is not None)


def split_test_by_time(frame: pd.DataFrame, fraction: float, column: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split labelled rows ordered in time: the test set is the latest ``fraction`` of them (rows
    sharing the time at the cut all on one side), as a competition on such data would split it."""
    mask = test_rows_by_time(frame, fraction, column)
    return frame[~mask].reset_index(drop=True), frame[mask].reset_index(drop=True)


def test_rows_by_time(frame: pd.DataFrame, fraction: float, column: str) -> np.ndarray:
    """The rows ``split_test_by_time`` makes test rows (a boolean mask)."""
    times = task_times(frame, column, "the labelled rows")
    mask = time_holdout(times, int(round(len(frame) * fraction)))
    if not mask.any():
        raise TaskError(
            f"every row has the same {column!r}: no row is later than another", "pass another --time-column, or none"
        )
    return mask


def split_test_groups(
    frame: pd.DataFrame, group_column: str, fraction: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded split of labelled rows into train and a test set by whole groups (ranking data: a
    group's rows are ranked against each other, so a group split across the two would leak)."""
    groups = pd.Series(frame[group_column].unique())
    chosen = split_holdout(groups, fraction, len(groups), seed, stratify=False)
    mask = frame[group_column].isin(set(groups[chosen])).to_numpy()
    return frame[~mask].reset_index(drop=True), frame[mask].reset_index(drop=True)


def default_prediction(spec: TaskSpec, train: pd.DataFrame) -> dict[str, object]:
    """A neutral value per prediction column for the sample submission."""
    from ..metrics import get_metric

    kind = get_metric(spec.metric).prediction
    target = spec.target_columns[0]
    if kind == "probability":
        return {c: 0.5 for c in spec.prediction_columns}
    if kind == "class_probabilities":
        share = round(1.0 / len(spec.classes or [1]), 6)
        return {c: share for c in spec.prediction_columns}
    if kind == "value":
        values = {c: train[c] if c in train else train[target] for c in spec.prediction_columns}
        return {c: float(pd.to_numeric(v, errors="coerce").astype(float).median()) for c, v in values.items()}
    # a label column per target (multi-label) takes its own most common label
    return {c: train[c if c in train else target].astype(str).mode().iloc[0] for c in spec.prediction_columns}


def write_task(
    dest: Path,
    spec: TaskSpec,
    description: str,
    train: pd.DataFrame,
    test_inputs: pd.DataFrame,
    answers: pd.DataFrame | None,
    train_rows: np.ndarray | None = None,
) -> Path:
    """Write task.yaml, description.md, public/ and private/ files, then load the result to prove it valid.
    ``train_rows``: the rows of ``train`` that are train rows (the rest became the test rows),
    written a block at a time so that a long table is never copied whole; None: all of them."""
    write_csv_exact(train, dest / "public" / spec.train_file, rows=train_rows)
    if train_rows is not None:  # the labels the sample's stand-in values come from
        labels = [c for c in dict.fromkeys([*spec.target_columns, *spec.prediction_columns]) if c in train]
        train = select_rows(train[labels], train_rows)
    write_csv_exact(test_inputs, dest / "public" / spec.test_file)
    return finish_task(dest, spec, description, test_inputs, train, answers)


def finish_task(
    dest: Path,
    spec: TaskSpec,
    description: str,
    test_keys: pd.DataFrame,
    train_labels: pd.DataFrame,
    answers: pd.DataFrame | None,
) -> Path:
    """Write what a task folder holds beside its train and test files (written already): the
    sample submission (``test_keys``: the test rows' id and key columns; ``train_labels``: the
    train rows' labels, which its stand-in values come from), the answers, description.md and
    task.yaml; then load the folder to prove it valid."""
    sample = pd.DataFrame({spec.id_column: test_keys[spec.id_column]})
    for key in spec.key_columns:
        sample[key] = test_keys[key]
    for col, value in default_prediction(spec, train_labels).items():
        sample[col] = value
    sample[spec.submission_columns].to_csv(dest / "public" / spec.sample_submission, index=False)
    if answers is not None:
        write_csv_exact(answers, dest / "private" / (spec.answers_file or "answers.csv"))
    (dest / "description.md").write_text(description)
    data = spec.model_dump(exclude_none=True)
    (dest / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    load_task(dest)
    return dest
