"""A competition folder that needs files of its own to be a task (a test table derived from
the sample submission: ``sources/sample_test_rows``; train and test files with the submission's
id column made of theirs: ``sources/submission_ids``) is converted into the task layout, as
every other source is, into ``$MLGUILD_HOME/tasks/<name>-<hash of its path>/``. The user's
folder is not touched, not even by a task.yaml: its files are hard links there (a copy where
the file system cannot link), so a competition of gigabytes costs no second copy on the same
disk; only the files the conversion changes are written anew."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import yaml

from ..core.errors import TaskError
from ..task.folder import NOT_DATA, TaskSpec
from ..util.exact_csv import read_csv_exact
from .array_tables import ArrayTables
from .folder_files import archive_files, unpack
from .labelled_files import TRAIN_FILES_FROM, LabelledFiles
from .position_rows import PositionRows
from .split_train import join_labels
from .submission_ids import numbered, with_id, with_key_copy
from .tables import as_csv
from .tables import frame as table

if TYPE_CHECKING:  # infer.py reads folders and calls this module to write what it inferred
    from .infer import Inferred

_ROOT_FILES = ("description.md", "brief.md", "competition.json", "knowledge", "private")  # beside task.yaml
LEADERBOARD = "leaderboard.csv"  # bench.grading's name for it (sources may not import bench)


def converted_folder(home: Path, folder: Path, name: str) -> Path:
    """Where the converted task of the user's ``folder`` lies: ``home/tasks/<name>-<hash>`` (the
    hash of the folder's path keeps two folders of the same name apart)."""
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:8]
    return home / "tasks" / f"{name}-{digest}"


def write_converted(
    spec: TaskSpec,
    root: Path,
    dest: Path,
    test_rows: pd.DataFrame | None,
    made_of: tuple[str, ...],
    indexed: bool = False,
    retyped: tuple[str, ...] = (),
    nested: str | None = None,
    labelled: LabelledFiles | None = None,
    unpacked: tuple[Path, ...] = (),
    shards: dict[str, int] | None = None,
    arrays: ArrayTables | None = None,
    sample_columns: tuple[str, ...] = (),
    blank: tuple[str, ...] = (),
    labels_file: str | None = None,
    numbered_train: bool = False,
    positions: PositionRows | None = None,
) -> Path:
    """Build the task folder ``dest`` from the user's task folder ``root`` (data in
    ``root/spec.data_dir``): its public files linked into ``dest/public``, its description,
    knowledge and private answers beside them, the files of its own (``write_own_files``), and
    task.yaml. Rebuilt from scratch each time (runs live elsewhere), but for the knowledge items
    added to it since; the path of the task.yaml written."""
    data_dir = root / spec.data_dir
    kept = dest.parent / f".{dest.name}.knowledge"  # what `mlguild knowledge` added there survives a rebuild
    if (dest / "knowledge").is_dir():
        shutil.rmtree(kept, ignore_errors=True)
        shutil.move(dest / "knowledge", kept)
    if dest.exists():
        shutil.rmtree(dest)
    public = dest / "public"
    public.mkdir(parents=True)
    flat = spec.data_dir == "."
    # A task of files holds its archives unpacked, not as they are: an archive of the train folder
    # beside the split would show file names (cat.0.jpg) that tell the holdout's labels.
    packed = {p.name for p in archive_files(data_dir)} if spec.file_column else set()
    _link_tree(data_dir, public, lambda rel: (flat and rel.parts[0] in NOT_DATA) or rel.as_posix() in packed)
    folders = tuple("" if f in (None, ".") else str(f) for f in (spec.train_files, spec.test_files))
    unpack(list(unpacked), public, under=folders)  # the rows' files alone, not all an archive holds
    for name in _ROOT_FILES:
        source = root / name
        if source.is_dir() and not source.is_symlink():
            _link_tree(source, dest / name, lambda rel: False)
        elif source.is_file() and not source.is_symlink():
            _link_or_copy(source, dest / name)
    if kept.is_dir():
        for path in sorted(kept.rglob("*")):
            target = dest / "knowledge" / path.relative_to(kept)
            if path.is_file() and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)
        shutil.rmtree(kept)
    # the competition's leaderboard, where `mlguild grade` finds it: in the task folder or above it
    board = next((f / LEADERBOARD for f in (root, root.parent) if (f / LEADERBOARD).is_file()), None)
    if board is not None:
        _link_or_copy(board, dest / LEADERBOARD)
    own = (test_rows, made_of, indexed, retyped, nested, labelled, shards, sample_columns, blank)
    write_own_files(public, spec, *own, labels_file=labels_file, numbered_train=numbered_train, positions=positions)
    if arrays is not None and test_rows is not None:  # the NumPy arrays as the task's tables, the arrays left out
        ids, label = test_rows[spec.id_column], spec.target_columns[0]
        arrays.write(data_dir, public, spec.id_column, label, ids, spec.train_file, spec.test_file)
    if labelled is not None:  # which file each train id is, for the user: outside public/, unseen by scripts
        pd.DataFrame({spec.id_column: labelled.table[spec.id_column], "file": labelled.sources}).to_csv(
            dest / TRAIN_FILES_FROM, index=False
        )
    converted = spec.model_copy(update={"data_dir": "public"})
    data = converted.model_dump(exclude_none=True)
    data["answers_file"] = converted.answers_file  # null when there are none: not the default name
    path = dest / "task.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def write_own_files(
    public: Path,
    spec: TaskSpec,
    test_rows: pd.DataFrame | None,
    made_of: tuple[str, ...],
    indexed: bool = False,
    retyped: tuple[str, ...] = (),
    nested: str | None = None,
    labelled: LabelledFiles | None = None,
    shards: dict[str, int] | None = None,
    sample_columns: tuple[str, ...] = (),
    blank: tuple[str, ...] = (),
    labels_file: str | None = None,
    numbered_train: bool = False,
    positions: PositionRows | None = None,
) -> None:
    """Write into ``public`` (which holds the folder's own files, or links to them) the files the
    task needs of its own: its tab-separated tables as CSV files (the tables removed: a train
    table left beside would show the holdout's labels), the derived test table, the sample
    submission without its pandas index (``indexed``) or with only its columns ``sample_columns``
    (the key and the prediction, of one that repeats the test inputs; the train and test files then
    get a copy of the key as an input, ``with_key_copy``), and the train and test files with the id
    column made of ``made_of``; train files in subfolders named by the label column ``nested``
    laid flat in their folder (a file's folder would tell its label, the holdout's too); with no
    train table, the one ``labelled`` derives, and its files linked under their new names; the test
    file without the target's columns it holds empty (``blank``); the train file with the labels of
    ``labels_file`` joined to it, and that file removed (sources/split_train); a train file without
    the id with ids from its row numbers (``numbered_train``); records of sequences as one row per
    position (``positions``, sources/position_rows). A link is replaced, never written through."""
    if labels_file is not None:
        join_labels(public, spec.train_file, labels_file, spec.id_column)
    if labelled is not None:  # the train files renamed, in place of their folder (what is left there goes)
        (public / spec.train_file).unlink(missing_ok=True)  # a link to the user's file is replaced
        labelled.table.to_csv(public / spec.train_file, index=False)
        renamed = {
            labelled.folder: list(zip(labelled.table[spec.id_column].astype(str), labelled.sources, strict=True))
        }
        if labelled.test_sources is not None:
            renamed[labelled.test_folder] = list(labelled.test_sources.items())
        for k, pairs in enumerate(renamed.values()):
            staging = public / f".renamed-{k}"
            staging.mkdir()
            for name, source in pairs:
                (public / source).rename(staging / f"{name}{labelled.suffix}")
        for k, moved in enumerate(renamed):
            shutil.rmtree(public / moved)
            (public / moved).parent.mkdir(parents=True, exist_ok=True)
            (public / f".renamed-{k}").rename(public / moved)
        for name in labelled.left_out:
            (public / name).unlink(missing_ok=True)
    for name in retyped:
        converted = table(public / name)
        (public / name).unlink()
        converted.to_csv(public / as_csv(name), index=False)
    if positions is not None:  # after the JSON tables are CSV files: one row per position of each record
        ids = read_csv_exact(public / spec.sample_submission, usecols=[spec.id_column])[spec.id_column]
        exploded = {
            spec.train_file: positions.train_rows(read_csv_exact(public / spec.train_file)),
            spec.test_file: positions.test_rows(read_csv_exact(public / spec.test_file), ids),
        }
        for name, frame in exploded.items():
            (public / name).unlink()
            frame.to_csv(public / name, index=False)
    if test_rows is not None:
        (public / spec.test_file).unlink(missing_ok=True)  # a link to the user's file is replaced
        test_rows.to_csv(public / spec.test_file, index=False)
    rewrites = [(spec.sample_submission, lambda f: f.iloc[:, 1:])] if indexed else []
    if blank:
        rewrites.append((spec.test_file, lambda f: f.drop(columns=list(blank))))
    if sample_columns:  # a sample repeating the test rows' inputs: their key and the prediction
        rewrites.append((spec.sample_submission, lambda f: f[list(sample_columns)]))
        # the key is the rows' text: a copy of it is an input (scripts leave the id out of their features)
        rewrites += [(name, lambda f: with_key_copy(f, spec.id_column)) for name in (spec.train_file, spec.test_file)]
    if numbered_train:
        rewrites.append((spec.train_file, lambda f: numbered(f, spec.id_column)))
    if made_of:
        rewrites += [
            (name, lambda f: with_id(f, spec.id_column, made_of)) for name in (spec.train_file, spec.test_file)
        ]
    for name, change in rewrites:
        changed = change(read_csv_exact(public / name))
        (public / name).unlink()
        changed.to_csv(public / name, index=False)
    if nested and spec.file_column and spec.train_files:
        folder, train = public / spec.train_files, read_csv_exact(public / spec.train_file)
        for label, value in zip(train[nested], train[spec.file_column], strict=True):
            name = f"{value}{spec.file_suffix}"
            (folder / label / name).rename(folder / name)
        for label in set(train[nested]):
            shutil.rmtree(folder / label)  # what is left there belongs to no train row
    emptied: set[Path] = set()
    for role, depth in (shards or {}).items():  # files in subfolders named by their first characters: laid flat
        table_file, files = (
            (spec.train_file, spec.train_files) if role == "train" else (spec.test_file, spec.test_files)
        )
        folder = public / str(files)
        values = read_csv_exact(public / table_file, usecols=[str(spec.file_column)])[str(spec.file_column)]
        for value in dict.fromkeys(values):
            name = f"{value}{spec.file_suffix}"
            at = folder / "/".join(value[:depth]) / name
            if len(value) <= depth or "/" in value or "\\" in value or value.startswith(".") or not at.is_file():
                raise TaskError(
                    f"the rows' files were read as lying in folders named by their ids' first {depth} "
                    f"character(s), but {table_file}'s {value!r} has no file {at.relative_to(public)}",
                    "write task.yaml by hand, naming train_files and test_files (see docs/guides/task-folders.md)",
                )
            at.rename(folder / name)
            emptied.add(folder / value[0])
    for shard in emptied:  # once both are flat: what is left there belongs to no row
        shutil.rmtree(shard, ignore_errors=True)


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


def write_inferred(inferred: Inferred) -> Path:
    """Write task.yaml into the task folder (the only file written, but for a task that needs files
    of its own, ``Inferred.converted``: then only ever a folder of mlguild's own, such as a Kaggle
    download) and return its path."""
    path = inferred.root / "task.yaml"
    data_dir = inferred.root / inferred.spec.data_dir
    own = (inferred.test_rows, inferred.made_of, inferred.indexed, inferred.retyped, inferred.nested)
    write_own_files(data_dir, inferred.spec, *own, sample_columns=inferred.sample_columns, blank=inferred.blank)
    data = inferred.spec.model_dump(exclude_none=True)
    data["answers_file"] = inferred.spec.answers_file  # null when there are none: not the default name
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path
