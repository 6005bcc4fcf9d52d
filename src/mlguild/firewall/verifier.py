"""The firewall's independent verifier: re-reads every workspace file from disk and proves
that no sealed label is in it.

Independent of the builder (``mlguild.firewall.workspace``) on purpose: it trusts nothing the builder
computed, only the files, the manifest and the sealed answers.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..task.column_parsers import parse_datetime
from ..task.spec import HOLDOUT_INPUTS
from ..util.exact_csv import read_csv_exact, rows_where
from ..util.fs import sha256_file
from ..util.parquet import MISSING
from .copies import comparable, copied_columns
from .workspace import Workspace


@dataclass
class VerifyReport:
    ok: bool
    checked_files: int
    problems: list[str] = field(default_factory=list)


def verify_workspace(run_dir: Path, id_column: str, target_columns: list[str]) -> VerifyReport:
    """Re-read every workspace file and prove that no sealed label is present in it.

    Checks: every file matches the manifest (no file added, removed or changed); no CSV column
    named like a target agrees with the sealed labels on sealed ids beyond chance; and no file
    is byte-identical to a sealed file; and a split by time has no training row later than the holdout.
    """
    ws = Workspace(run_dir)
    problems: list[str] = []
    manifest = ws.manifest()
    on_disk = {p.relative_to(ws.data_dir).as_posix(): p for p in ws.data_dir.rglob("*") if p.is_file()}
    if set(on_disk) != set(manifest["workspace"]):
        problems.append(f"workspace files differ from manifest: {sorted(set(on_disk) ^ set(manifest['workspace']))}")

    sealed_frames = []
    sealed_hashes = set()
    for path in ws.sealed_dir.iterdir():
        sealed_hashes.add(sha256_file(path))
        if path.suffix.lower() != ".csv":  # e.g. the known labels (JSON): no rows to match
            continue
        frame = read_csv_exact(path)
        if id_column not in frame.columns:
            continue
        sealed_frames.append(frame)
    sealed = pd.concat(sealed_frames, ignore_index=True) if sealed_frames else pd.DataFrame(columns=[id_column])
    # Only a file's rows of sealed ids can reveal a sealed label, so only they are read (a
    # block at a time): the train file has none, however long it is.
    sealed_ids = set(sealed[id_column].tolist())

    @functools.cache
    def inputs() -> list[pd.DataFrame]:
        """The workspace's files of rows without labels, their rows of sealed ids (read only when
        a column needs them)."""
        unlabelled = lambda c: id_column in c and not set(target_columns) & set(c)
        paths = [p for p in on_disk.values() if p.suffix.lower() == ".csv"]
        return [rows_where(p, id_column, sealed_ids) for p in paths if unlabelled(read_csv_exact(p, nrows=0).columns)]

    for rel, path in sorted(on_disk.items()):
        entry = manifest["workspace"].get(rel)
        digest = sha256_file(path)
        if entry and entry["sha256"] != digest:
            problems.append(f"{rel} changed since the workspace was built")
        if digest in sealed_hashes:
            problems.append(f"{rel} is byte-identical to a sealed file")
        if path.suffix.lower() == ".csv":
            rows = rows_where(path, id_column, sealed_ids)
            problems.extend(_check_csv(rel, rows, id_column, target_columns, sealed, inputs))
        elif path.suffix.lower() == ".parquet":
            problems.extend(_check_parquet(rel, path, id_column))
    problems.extend(_check_time_order(ws, manifest, id_column))
    return VerifyReport(ok=not problems, checked_files=len(on_disk), problems=problems)


def _check_parquet(rel: str, path: Path, id_column: str) -> list[str]:
    """A Parquet copy (mlguild.util.parquet) reveals nothing its CSV does not when it is that
    CSV's rows: the same columns, and the same ids in the same order (which the CSV's checks
    cover)."""
    import pyarrow.parquet as pq

    csv = path.with_suffix(".csv")
    if not csv.is_file():
        return [f"{rel} is a Parquet file with no CSV of the same rows beside it"]
    columns = pq.read_schema(path).names
    if columns != list(read_csv_exact(csv, nrows=0).columns):
        return [f"{rel} has other columns than {csv.name}"]
    ids = pq.read_table(path, columns=[id_column]).column(id_column).to_pandas()
    written = read_csv_exact(csv, usecols=[id_column])[id_column]
    written = written.where(~written.isin(MISSING))  # missing in the copy, as pandas reads them
    left, right = (ids.fillna("").to_numpy(dtype=str), written.fillna("").to_numpy(dtype=str))
    if len(left) != len(right) or not (left == right).all():
        return [f"{rel} does not hold the rows of {csv.name}, in its order"]
    return []


def _check_csv(
    rel: str,
    frame: pd.DataFrame,
    id_column: str,
    targets: list[str],
    sealed: pd.DataFrame,
    inputs: Callable[[], list[pd.DataFrame]],
) -> list[str]:
    """``frame``: a file's rows of sealed ids (all of them).

    A label column reveals sealed labels when, on the sealed ids it lists, its values match the
    sealed labels more often than chance (independence) allows — by 3 standard deviations and at
    least 5 rows. A constant template value (a sample submission) matches exactly at chance; a copy,
    or a leak of a few percent of rows, does not. One exception: a label column that repeats,
    row for row on the sealed ids, a column of the public inputs (``inputs()``: the workspace's
    files of rows without labels) reveals nothing they do not, however well it matches: a competition's
    sample submission may predict each row's input as its label (a text normalisation's
    "after" = "before"), and a task whose labels mostly equal an input matches that often."""
    if id_column not in frame.columns:
        return []
    problems = _exact_copies(rel, frame, id_column, [c for c in targets if c in sealed.columns], sealed)
    present = [c for c in targets if c in frame.columns and c in sealed.columns]
    if not present:
        return problems
    joined = _keyed(frame[[id_column, *present]], id_column).merge(
        _keyed(sealed[[id_column, *present]], id_column), on=[id_column, _POS], suffixes=("", "__sealed")
    )
    for col in present:
        seen, truth = comparable(joined[col]), comparable(joined[f"{col}__sealed"])
        n = len(joined)
        if n == 0:
            continue
        matches = int((seen == truth).sum())
        chance = float((truth.value_counts(normalize=True) * seen.value_counts(normalize=True)).sum())
        expected, spread = n * chance, (n * chance * (1 - chance)) ** 0.5
        if matches >= 5 and matches > expected + 3 * spread and not _repeats_an_input(frame, id_column, col, inputs()):
            problems.append(
                f"{rel} column {col!r} matches the sealed labels on {matches} of {n} sealed ids "
                f"(chance: {expected:.0f})"
            )
    return problems


def _repeats_an_input(frame: pd.DataFrame, id_column: str, column: str, inputs: list[pd.DataFrame]) -> bool:
    """Whether ``frame[column]`` equals, on every one of its rows, one column of an inputs file
    holding every one of its ids (matched by id, and by place among a repeated id's rows)."""
    own = _keyed(frame[[id_column, column]], id_column)
    for rows in inputs:
        joined = own.merge(_keyed(rows, id_column), on=[id_column, _POS], suffixes=("", "__input"))
        if len(joined) == len(own) > 0:
            others = [c for c in joined.columns if c not in (id_column, _POS, column)]
            if copied_columns(joined[others], joined[column]):
                return True
    return False


def _exact_copies(rel: str, frame: pd.DataFrame, id_column: str, targets: list[str], sealed: pd.DataFrame) -> list[str]:
    """Any column, under any name, that reproduces a sealed label exactly on 20+ sealed ids.
    No honest feature is a perfect copy of the label, so this catches renamed leaks."""
    renamed = sealed[[id_column, *targets]].rename(columns={t: f"{t}__sealed" for t in targets})
    on_sealed = _keyed(frame, id_column).merge(_keyed(renamed, id_column), on=[id_column, _POS])
    if len(on_sealed) < 20:
        return []
    problems = []
    for target in targets:
        truth = on_sealed[f"{target}__sealed"]
        if comparable(truth).nunique() < 2:
            continue
        for col in copied_columns(on_sealed[list(frame.columns)], truth, skip={id_column, _POS, *targets}):
            problems.append(f"{rel} column {col!r} is an exact copy of the sealed {target!r} labels")
    return problems


def _check_time_order(ws: Workspace, manifest: dict, id_column: str) -> list[str]:
    """A split the manifest says is by time: every training row of the workspace is as old as,
    or older than, every holdout group's latest row (a group is a row when ids are unique),
    re-read from the files rather than taken from the builder's word."""
    split = manifest.get("split", {})
    if split.get("kind") != "time":
        return []
    column = split["time_column"]
    train_file = json.loads((ws.data_dir / "task.json").read_text())["train_file"]
    train_path, holdout_path = ws.data_dir / train_file, ws.data_dir / HOLDOUT_INPUTS
    if column not in read_csv_exact(train_path, nrows=0) or column not in read_csv_exact(holdout_path, nrows=0):
        return [f"the time column {column!r} is missing from the workspace's train or holdout file"]
    train, holdout = (
        read_csv_exact(train_path, usecols=[column]),
        read_csv_exact(holdout_path, usecols=[id_column, column]),
    )
    train_times, holdout_times = parse_datetime(train[column]), parse_datetime(holdout[column])
    if train.empty or holdout.empty:
        return []
    latest_fit = train_times.max()
    earliest_group = holdout_times.groupby(holdout[id_column].to_numpy()).max().min()
    if latest_fit > earliest_group:
        return [f"a training row ({latest_fit}) is later than a holdout row ({earliest_group}) in {column!r}"]
    return []


_POS = "__position_in_group"


def _keyed(frame: pd.DataFrame, id_column: str) -> pd.DataFrame:
    """Rows keyed by (id, position among rows with that id): a plain merge on repeated ids
    (ranking tasks) would pair every row of a group with every other."""
    return frame.assign(**{_POS: frame.groupby(id_column, sort=False).cumcount()})
