"""Firewall: materialise what scripts may read, seal what they must not, and prove it.

``build_workspace`` writes ``run/workspace/data`` (train rows minus a seeded, stratified
holdout, or minus the latest rows when the task names a ``time_column``, see
``firewall.time_split``; holdout inputs without labels; test inputs; sample submissions) and
``run/sealed`` (holdout labels and test answers). Sealed data is *never* inside the
workspace — the guarantee is that the files do not exist there, not a prompt telling
scripts to keep away. ``mlguild.firewall.verifier`` is independent of the builder: it re-reads every
workspace file from disk and checks it against the sealed files and the manifest.
"""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from ..config import FirewallConfig
from ..core.errors import FirewallError, TaskError
from ..metrics import get_metric
from ..task.folder import Task, read_header
from ..task.spec import (
    HOLDOUT_FILES,
    HOLDOUT_INPUTS,
    HOLDOUT_SAMPLE,
    KNOWN_LABELS,
    RESERVED_NAMES,
    TaskSpec,
)
from ..task.time_order import time_orders_of_files
from ..util.exact_csv import read_csv_exact, write_csv_exact, write_rows
from ..util.parquet import column_types, parquet_rows, write_parquet
from .checks import check_ids, check_labels, no_copy_of_the_target
from .confirm import CONFIRM_ANSWERS, confirm_mask, confirm_size, shuffled_order
from .draws import split_holdout
from .row_files import copy_row_files, file_entry, inside
from .tables import copy_table
from .time_split import random_holdout_warning, task_times, time_holdout, time_split_record

HOLDOUT_ANSWERS = "holdout_answers.csv"
TEST_ANSWERS = "test_answers.csv"


@dataclass
class Workspace:
    """Paths of one run's firewalled data."""

    run_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.run_dir / "workspace" / "data"

    @property
    def sealed_dir(self) -> Path:
        return self.run_dir / "sealed"

    @property
    def manifest_path(self) -> Path:
        return self.run_dir / "manifest.json"

    @property
    def holdout_answers(self) -> Path:
        return self.sealed_dir / HOLDOUT_ANSWERS

    @property
    def test_answers(self) -> Path | None:
        path = self.sealed_dir / TEST_ANSWERS
        return path if path.exists() else None

    def manifest(self) -> dict:
        return json.loads(self.manifest_path.read_text())


def _make_read_only(root: Path) -> None:
    # A permission bit, not a security boundary (root ignores it): it stops honest accidents.
    for path in sorted(root.rglob("*"), reverse=True):
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def build_workspace(task: Task, run_dir: Path, cfg: FirewallConfig) -> Workspace:
    """Materialise the workspace and sealed files of a run, and write the manifest."""
    ws = Workspace(run_dir)
    spec = task.spec
    if ws.data_dir.exists() or ws.sealed_dir.exists():
        raise FirewallError(f"{run_dir} already has a workspace", "start a new run, or `mlguild resume` this one")
    ws.data_dir.mkdir(parents=True)
    ws.sealed_dir.mkdir(parents=True)

    # The columns the split and the checks need, read whole; every other column is read a block
    # at a time when the rows are written, so a table of any width and length fits in memory.
    train = read_csv_exact(task.train_path, usecols=_key_columns(task.spec, task.train_path))
    test = read_csv_exact(task.test_path, usecols=_key_columns(task.spec, task.test_path))
    check_ids(train, spec.id_column, task.train_path, spec.ids_unique)
    check_ids(test, spec.id_column, task.test_path, spec.ids_unique)
    if len(train) < 10:
        raise TaskError(f"{task.train_path} has only {len(train)} rows", "a task needs at least 10 labelled rows")
    check_labels(train, task)
    no_copy_of_the_target(train, task)
    for column in spec.metric_input_columns:
        if not (column in train and column in test):
            what = "its groups" if column == spec.metric_group_column else "the rows it scores"
            where = "group_column" if column == spec.metric_group_column else "scored_rows"
            raise TaskError(
                f"metric {spec.metric} reads {what} from the column {column!r}, which the train or test file lacks",
                f"set metric_params.{where} in task.yaml to a column of both files",
            )

    # Stratified by label; not by a set of labels a row: most sets of many labels are unique, and a
    # label's only row always stays a training row, so the holdout would hold the common sets only.
    # Nor by free text (an extracted phrase): the holdout would hold only the phrases that repeat
    # (short ones), never a row whose phrase is its whole tweet.
    metric = get_metric(spec.metric)
    stratify = spec.task_type in ("binary", "multiclass") and metric.prediction != "label_set" and not metric.free_text
    n_holdout = min(int(round(len(train) * cfg.holdout_fraction)), cfg.max_holdout_rows, len(train) - 1)
    timed = spec.time_column is not None and cfg.holdout == "auto"  # the holdout is the latest rows
    n_confirm, confirm_skipped = confirm_size(len(train), n_holdout, cfg, timed=timed)
    # One draw seals the holdout and the confirmation split together; the second is then cut from it.
    fraction, cap = cfg.holdout_fraction + n_confirm / len(train), cfg.max_holdout_rows + n_confirm
    split_words = _split_words(train, test, task, cfg, n_confirm)
    times = split_words.pop("times", None)
    if split_words["kind"] == "time":
        mask = split_words.pop("mask")
    elif spec.group_key is None:
        mask = split_holdout(train[spec.target_columns[0]], fraction, cap, cfg.seed, stratify)
    else:
        # Groups (a user's impressions: a repeated id, or a group_column beside a row id) are
        # wholly in train or in the holdout, or their rows would leak between the two.
        groups = pd.Series(train[spec.group_key].unique())
        chosen = split_holdout(groups, fraction, cap, cfg.seed, stratify=False)
        mask = train[spec.group_key].isin(set(groups[chosen])).to_numpy()
    confirm = confirm_mask(
        train, mask, n_confirm, spec.target_columns[0], spec.group_key or spec.id_column,
        grouped=spec.group_key is not None, stratify=stratify, times=times, seed=cfg.seed,
    )  # fmt: skip
    files: dict[str, dict] = {}
    out = ws.data_dir
    holdout_rows = write_rows(task.train_path, ~mask, inside(out, spec.train_file), take=mask)
    files[spec.train_file] = file_entry(out / spec.train_file, int((~mask).sum()))
    in_confirm = confirm[mask]
    if in_confirm.any():  # the confirmation rows hide among the holdout rows, in a seeded shuffle
        order = shuffled_order(holdout_rows[spec.group_key or spec.id_column], cfg.seed)
        holdout_rows, in_confirm = holdout_rows.iloc[order], in_confirm[order]
    if spec.file_column is not None:  # a file per row: the holdout's under neutral names
        holdout_rows = copy_row_files(task, train[~mask], holdout_rows, test, out, files)
    write_csv_exact(holdout_rows.drop(columns=spec.target_columns), out / HOLDOUT_INPUTS)
    files[HOLDOUT_INPUTS] = file_entry(out / HOLDOUT_INPUTS, len(holdout_rows))
    write_rows(task.test_path, np.ones(len(test), dtype=bool), inside(out, spec.test_file))
    files[spec.test_file] = file_entry(out / spec.test_file, len(test))
    if (out / spec.train_file).stat().st_size > cfg.parquet_above_mb * 1e6:  # a large table: typed copies too
        for name, rows in _parquet_copies(spec, out).items():
            files[name] = file_entry(out / name, rows)

    sample = read_csv_exact(task.sample_submission_path)
    shutil.copyfile(task.sample_submission_path, inside(out, spec.sample_submission))
    files[spec.sample_submission] = file_entry(out / spec.sample_submission, len(sample))
    write_csv_exact(_holdout_sample(sample, holdout_rows, spec.id_column, spec.key_columns), out / HOLDOUT_SAMPLE)
    files[HOLDOUT_SAMPLE] = file_entry(out / HOLDOUT_SAMPLE, len(holdout_rows))

    (out / "description.md").write_text(task.description)
    public = {**spec.public_dict(), "holdout_file": HOLDOUT_INPUTS, "holdout_sample_submission": HOLDOUT_SAMPLE}
    if spec.file_column is not None:
        public["holdout_files"] = HOLDOUT_FILES  # where the holdout rows' files are
    (out / "task.json").write_text(json.dumps(public, indent=2))
    for name in ("description.md", "task.json"):
        files[name] = file_entry(out / name, None)

    # Other public files (images, extra tables) are inputs: copy them unchanged.
    handled = {spec.train_file, spec.test_file, spec.sample_submission, "description.md"}
    # The row files were copied row by row above: copied whole, the train folder would show
    # the holdout rows' files under their own (possibly label-bearing) names.
    row_folders = tuple(f"{d}/" for d in (spec.train_files, spec.test_files) if d) if spec.file_column else ()
    tables = {t.file: t for t in spec.tables}
    label_free: dict[str, list[str]] = {}  # a table's columns dropped for carrying a label
    # Another format of the train or test table (train.parquet beside train.csv, as many
    # competitions ship them) holds the same rows, the holdout's labels among them: never
    # copied (a large table gets the harness's own typed copies: mlguild.util.parquet).
    same_table = {_stem(spec.train_file), _stem(spec.test_file), _stem(HOLDOUT_INPUTS)}
    other_formats: list[str] = []
    for src in task.public_files():
        rel = src.relative_to(task.public_dir).as_posix()
        if rel not in handled and "/" not in rel and rel not in tables and _stem(rel) in same_table:
            other_formats.append(rel)
            continue
        if rel not in handled and not rel.startswith(row_folders):
            if rel in RESERVED_NAMES:
                raise TaskError(
                    f"{src} has the name of a file the harness writes into the workspace", f"rename or remove {src}"
                )
            dest = inside(out, rel)
            if rel in tables:  # a lookup table: less any column carrying a label
                if dropped := copy_table(task, tables[rel], train, dest):
                    label_free[rel] = dropped
            else:
                shutil.copyfile(src, dest)
            files[rel] = file_entry(dest, None)

    # the scorer checks key columns row by row, and reads the metric's groups and scored rows beside the labels
    keep = list(dict.fromkeys([spec.id_column, *spec.key_columns, *spec.target_columns, *spec.metric_input_columns]))
    write_csv_exact(holdout_rows[~in_confirm][keep], ws.holdout_answers)
    sealed = {HOLDOUT_ANSWERS: file_entry(ws.holdout_answers, int((~in_confirm).sum()))}
    if in_confirm.any():
        write_csv_exact(holdout_rows[in_confirm][keep], ws.sealed_dir / CONFIRM_ANSWERS)
        sealed[CONFIRM_ANSWERS] = file_entry(ws.sealed_dir / CONFIRM_ANSWERS, int(in_confirm.sum()))
    if task.answers_path is not None:
        _seal_test_answers(task, test, ws.sealed_dir / TEST_ANSWERS)
        sealed[TEST_ANSWERS] = file_entry(ws.sealed_dir / TEST_ANSWERS, None)
    if stratify:
        # The scorer refuses a predicted label it does not know; a class too rare to reach
        # the holdout is still a label a model may rightly predict, so it learns them all here.
        labels = {c: sorted(train[c].unique().tolist()) for c in spec.target_columns}
        (ws.sealed_dir / KNOWN_LABELS).write_text(json.dumps(labels))
        sealed[KNOWN_LABELS] = file_entry(ws.sealed_dir / KNOWN_LABELS, None)

    # Sealed files are for the harness (root) alone: when scripts run as an unprivileged uid,
    # these modes are what keeps them unreadable even by absolute path.
    ws.sealed_dir.chmod(0o700)
    for path in ws.sealed_dir.iterdir():
        path.chmod(0o600)

    manifest = {
        "task": spec.name,
        "split": {
            "seed": cfg.seed,
            "fraction": cfg.holdout_fraction,
            "stratified": stratify and split_words["kind"] != "time",
            "train_rows": int((~mask).sum()),
            "holdout_rows": int((~in_confirm).sum()),
            "confirm_rows": int(in_confirm.sum()),
            **({"confirm_skipped": confirm_skipped} if confirm_skipped else {}),
            "test_rows": len(test),
            **split_words,
        },
        "workspace": files,
        **({"tables_dropped": label_free} if label_free else {}),
        **({"other_formats_not_copied": other_formats} if other_formats else {}),
        "sealed": sealed,
    }
    ws.manifest_path.write_text(json.dumps(manifest, indent=2))
    _make_read_only(ws.data_dir)
    return ws


def _split_words(train: pd.DataFrame, test: pd.DataFrame, task: Task, cfg: FirewallConfig, n_confirm: int) -> dict:
    """How the holdout is cut, for the manifest: by time (with the holdout ``mask``) when the
    task names a time_column and the config does not force a random split; otherwise
    random, with a warning when the test rows come after the train rows in a date column.
    A split by time also returns the parsed ``times``; ``n_confirm`` more rows are sealed
    for the confirmation split."""
    spec = task.spec
    skip = [spec.id_column, *spec.target_columns]
    if spec.time_column is not None and cfg.holdout == "auto":
        times = task_times(train, spec.time_column, str(task.train_path))
        n_holdout = min(int(round(len(train) * cfg.holdout_fraction)), cfg.max_holdout_rows, len(train) - 1)
        n_holdout += n_confirm
        groups = None if spec.group_key is None else train[spec.group_key]
        mask = time_holdout(times, n_holdout, groups)
        if not mask.any():
            raise TaskError(
                f"every labelled row of {task.train_path} has the same {spec.time_column!r}: no row is later than another",
                "set time_column: null in task.yaml for a random holdout",
            )
        grouped = spec.group_key is not None
        return {"mask": mask, "times": times, **time_split_record(times, mask, spec.time_column, grouped)}
    orders = time_orders_of_files(task.train_path, task.test_path, skip)
    warning = random_holdout_warning(orders, forced=spec.time_column is not None)
    return {"kind": "random", **({"warning": warning} if warning else {})}


def _stem(name: str) -> str:
    """A file's name up to its first dot: the table a file holds, whatever its format."""
    return PurePosixPath(name).name.split(".")[0]


def _parquet_copies(spec: TaskSpec, out: Path) -> dict[str, int]:
    """Parquet copies of the training, holdout and test files (mlguild.util.parquet), their
    columns typed alike over all three; the ids, labels and keys kept as text. Their names and
    row counts; none where a file cannot be typed (the CSV files are the contract)."""
    csvs = [out / spec.train_file, out / HOLDOUT_INPUTS, out / spec.test_file]
    text = [spec.id_column, *spec.target_columns, *spec.key_columns, spec.group_column, spec.file_column]
    written: dict[str, int] = {}
    try:
        types = column_types(csvs, [c for c in text if c])
        for csv in csvs:
            path = write_parquet(csv, types)
            written[path.relative_to(out).as_posix()] = parquet_rows(path)
    except TaskError:
        for name in written:
            (out / name).unlink()
        return {}
    return written


def _seal_test_answers(task: Task, test: pd.DataFrame, dest: Path) -> None:
    """The test answers, sealed as they are, or with the input columns the metric reads (its
    groups, the columns that pick the scored rows) taken from the test file by id where they
    lack them (they are inputs: the answers need not repeat them)."""
    assert task.answers_path is not None
    header = read_header(task.answers_path)
    absent = [c for c in task.spec.metric_input_columns if c not in header]
    if not absent:
        shutil.copyfile(task.answers_path, dest)
        return
    answers = read_csv_exact(task.answers_path)
    by_id = test.drop_duplicates(task.spec.id_column).set_index(task.spec.id_column)
    for column in absent:
        answers[column] = answers[task.spec.id_column].map(by_id[column])
    write_csv_exact(answers, dest)


def _key_columns(spec: TaskSpec, path: Path) -> list[str] | None:
    """The columns of the CSV ``path`` that the split, the checks and the sealed files read
    (ids, labels, groups, keys, times, row files, the joins of lookup tables); None for all of
    them where its header repeats a name (pandas renames the repeats)."""
    header = read_header(path)
    if len(set(header)) != len(header):
        return None
    wanted = {
        spec.id_column,
        *spec.target_columns,
        *spec.key_columns,
        *(t for s in spec.tables for t in s.join_columns),
    }
    wanted |= {c for c in (spec.group_key, spec.time_column, spec.file_column, *spec.metric_input_columns) if c}
    return [c for c in header if c in wanted]


def _holdout_sample(
    sample: pd.DataFrame, holdout_rows: pd.DataFrame, id_column: str, key_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """A sample submission for the holdout rows: the holdout ids (and key columns, such as the
    item of a (query, item) row) with the template's first-row values."""
    frame = pd.DataFrame({id_column: holdout_rows[id_column].to_numpy()})
    for col in key_columns:
        frame[col] = holdout_rows[col].to_numpy()
    first = sample.iloc[0] if len(sample) else None
    for col in sample.columns:
        if col != id_column and col not in key_columns:
            frame[col] = first[col] if first is not None else ""
    return frame[list(sample.columns)]


def sealed_paths(run_dir: Path) -> list[Path]:
    """Paths a script must never reach (used by the guard): the sealed labels, the journal, the
    final refit's data (it holds the holdout's labels), the audit (the confirmation and test
    scores), and the original task folder (so does its train file)."""
    paths = [Workspace(run_dir).sealed_dir, run_dir / "journal.jsonl", run_dir / "final", run_dir / "audit"]
    snapshot = run_dir / "task.json"
    if snapshot.exists():
        root = json.loads(snapshot.read_text()).get("root")
        if root:
            paths.append(Path(root))
    return paths


__all__ = [
    "Workspace",
    "build_workspace",
    "read_csv_exact",
    "sealed_paths",
    "split_holdout",
]
