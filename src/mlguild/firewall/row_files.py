"""The firewall's file writes: a destination refused unless it stays inside its folder, a
manifest entry for a written file, and the copies of each row's input file (images, audio,
arrays), with neutral names for the holdout rows' so that no name tells a script a label."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import pandas as pd

from ..core.errors import FirewallError, TaskError
from ..task.folder import Task
from ..task.spec import HOLDOUT_FILES, plain_relative_name
from ..util.fs import sha256_file


def inside(folder: Path, name: str) -> Path:
    """``folder / name``, refused unless it resolves (links included) inside ``folder``; its parent
    folders are created. TaskSpec already refuses such names: this is the second lock, so that
    no name, however it got here, makes the firewall write over a file outside the run."""
    dest = folder / name
    if not dest.resolve().is_relative_to(folder.resolve()):
        raise FirewallError(
            f"refusing to write {name!r}: it leads outside {folder}",
            "name files inside the task's public/ folder in task.yaml (e.g. train.csv)",
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest


def file_entry(path: Path, rows: int | None) -> dict:
    return {"bytes": path.stat().st_size, "sha256": sha256_file(path), "rows": rows}


def copy_row_files(
    task: Task, fit_rows: pd.DataFrame, holdout_rows: pd.DataFrame, test: pd.DataFrame, out: Path, files: dict
) -> pd.DataFrame:
    """Copy each row's input file into the workspace: the fit rows' and the test rows' under
    their own names, the holdout rows' into holdout_files/ under neutral names (h000000.jpg, ...),
    so that no name or folder of theirs can tell a script their label. Returns the holdout rows
    with those neutral names (and ids, when the file column is the id column)."""
    spec = task.spec
    column, suffix = str(spec.file_column), spec.file_suffix
    train_dir, test_dir = task.public_dir / str(spec.train_files), task.public_dir / str(spec.test_files)

    def copy(value: str, src_dir: Path, dest_rel: str) -> None:
        name = f"{value}{suffix}"
        try:
            plain_relative_name(name, "data")
        except ValueError as exc:
            raise TaskError(f"the file column {column!r} holds {exc}", f"fix the rows of {task.train_path}") from None
        src = src_dir / name
        if not src.is_file() or not src.resolve().is_relative_to(task.public_dir.resolve()):
            raise TaskError(f"{src} is missing (named by a row's {column!r})", f"add it, or fix file_column/{suffix!r}")
        dest = inside(out, dest_rel)
        shutil.copyfile(src, dest)
        files[dest_rel] = file_entry(dest, None)

    for value in fit_rows[column]:
        copy(value, train_dir, f"{spec.train_files}/{value}{suffix}")
    for value in test[column]:
        copy(value, test_dir, f"{spec.test_files}/{value}{suffix}")
    neutral = [f"h{i:06d}{PurePosixPath(v).suffix}" for i, v in enumerate(holdout_rows[column])]
    for value, name in zip(holdout_rows[column], neutral, strict=True):
        copy(value, train_dir, f"{HOLDOUT_FILES}/{name}{suffix}")
    renamed = holdout_rows.copy()
    renamed[column] = neutral
    return renamed
