"""A competition folder whose test rows are listed only by the sample submission: each row's
image or sound in a test folder, no CSV of test rows (most of MLE-bench's image and audio
competitions: ``train.csv`` with id and label, ``train/`` and ``test/`` files,
``sample_submission.csv``).

Such a folder is converted into the task layout, as every other source is: the test table is
the sample submission's id column (the id names each row's file, as it does in the train
file), written with the folder's files into a task folder of mlguild's own under
``$MLGUILD_HOME/tasks/``. The user's folder is not touched, not even by a task.yaml: its files
are hard links there (a copy where the file system cannot link), so a competition of gigabytes
costs no second copy on the same disk. Everything downstream (the firewall, the recipes, the
grader) reads a test file as in any task. The test table is derived only when the sample's ids
really name files in a test folder and the train file's ids name files in another; a sample
whose ids name nothing stays refused (a table of ids alone holds no inputs).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pandas as pd
import yaml

from ..task.folder import NOT_DATA, TaskSpec
from ..util.exact_csv import read_csv_exact
from .file_columns import FILE_PROBE, file_column

DERIVED_TEST = "test.csv"  # the derived test table's name in the converted folder's public/
_ROOT_FILES = ("description.md", "brief.md", "competition.json", "knowledge", "private")  # beside task.yaml


def sample_lists_test_files(
    data_dir: Path, sample_path: Path, train: pd.DataFrame, id_column: str
) -> pd.DataFrame | None:
    """The test table (the sample submission's id column, every row) when those ids name one
    file each in a test folder and the train file's ids name files in another; else None."""
    if id_column not in train:
        return None
    rows = read_csv_exact(sample_path)[[id_column]]
    if rows.empty or rows[id_column].duplicated().any():  # ids that repeat list no files one by one
        return None
    found = file_column(data_dir, train, rows.head(FILE_PROBE), [id_column])
    if found is None or found["train_files"] == found["test_files"]:
        return None
    return rows


def converted_folder(home: Path, folder: Path, name: str) -> Path:
    """Where the converted task of the user's ``folder`` lies: ``home/tasks/<name>-<hash>`` (the
    hash of the folder's path keeps two folders of the same name apart)."""
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:8]
    return home / "tasks" / f"{name}-{digest}"


def write_converted(spec: TaskSpec, test_rows: pd.DataFrame, root: Path, dest: Path) -> Path:
    """Build the task folder ``dest`` from the user's task folder ``root`` (data in
    ``root/spec.data_dir``): its public files linked into ``dest/public``, its description,
    knowledge and private answers beside them, the derived test table, and task.yaml. Rebuilt
    from scratch each time (runs live elsewhere); the path of the task.yaml written."""
    data_dir = root / spec.data_dir
    if dest.exists():
        shutil.rmtree(dest)
    public = dest / "public"
    public.mkdir(parents=True)
    flat = spec.data_dir == "."
    _link_tree(data_dir, public, lambda rel: flat and rel.parts[0] in NOT_DATA)
    for name in _ROOT_FILES:
        source = root / name
        if source.is_dir() and not source.is_symlink():
            _link_tree(source, dest / name, lambda rel: False)
        elif source.is_file() and not source.is_symlink():
            _link_or_copy(source, dest / name)
    test_rows.to_csv(public / spec.test_file, index=False)
    converted = spec.model_copy(update={"data_dir": "public"})
    data = converted.model_dump(exclude_none=True)
    data["answers_file"] = converted.answers_file  # null when there are none: not the default name
    path = dest / "task.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def _link_tree(source: Path, dest: Path, skip) -> None:
    """Every file under ``source`` at the same place under ``dest``, but hidden ones, links (they
    could lead anywhere) and those ``skip`` names by their relative path."""
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if skip(rel) or any(part.startswith(".") for part in rel.parts) or path.is_symlink():
            continue
        if path.is_dir():
            (dest / rel).mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            _link_or_copy(path, dest / rel)


def _link_or_copy(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, dest)
    except OSError:  # another file system, or one without hard links
        shutil.copyfile(source, dest)
