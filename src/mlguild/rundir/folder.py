"""A run is a directory of plain files a human can read (layout in ARCHITECTURE.md).

This module creates and opens run directories; it owns their paths, the saved config and
the task snapshot, and opens the journal. It does not run anything.

Creation is crash-safe: a run is built in a hidden sibling, ``.<run-id>.partial``, and renamed
into place only once complete (its journal holds ``run_started``). A kill during creation
leaves only that hidden folder, which the next ``mlguild run`` with the same id removes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..config import Config, save_config
from ..core.errors import RunError, SubmissionError, TaskError
from ..firewall.confirm import confirm_ids, split_predictions
from ..firewall.verifier import verify_workspace
from ..firewall.workspace import HOLDOUT_SAMPLE, Workspace, build_workspace
from ..metrics import python_file
from ..scoring.floors import write_prior_submission
from ..scoring.integrity import fingerprint
from ..scoring.scorer import RunScorers, Scorer
from ..scoring.strict_csv import read_table
from ..task.folder import Task, TaskSpec, short
from ..task.identity import data_fingerprint, task_key
from ..task.profile import DataProfile, profile_workspace
from ..util.fs import fsync_dir
from . import events
from .journal import Journal

_RUN_ID = re.compile(r"\w[\w.-]{0,127}")
_PARTIAL = re.compile(r"\.(.+)\.partial")


def new_run_id(task_name: str) -> str:
    # The task name comes from task.yaml: only its plain characters may reach a path.
    name = re.sub(r"[^\w.-]+", "-", task_name).strip(".-")[:60] or "run"
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a plain folder name (letters, digits, '.', '_', '-'; not starting
    with '.' or '-'); RunError otherwise, so an id can never lead out of the runs folder."""
    if not _RUN_ID.fullmatch(run_id or ""):
        raise RunError(
            f"--run-id {short(run_id)} is not a plain name",
            "use letters, digits, '.', '_' and '-' (up to 128, not starting with '.' or '-'), e.g. --run-id churn-1",
        )
    return run_id


@dataclass
class RunDir:
    path: Path
    config: Config
    spec: TaskSpec
    description: str
    journal: Journal
    lock_fd: int | None = None

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.path)

    @property
    def nodes_dir(self) -> Path:
        return self.path / "nodes"

    @property
    def best_dir(self) -> Path:
        return self.path / "best"

    def node_dir(self, node_id: str) -> Path:
        return self.nodes_dir / node_id

    @property
    def task_root(self) -> Path:
        """The task folder the run was made from (its knowledge/ lives there)."""
        return Path(json.loads((self.path / "task.json").read_text())["root"])

    @property
    def task_key(self) -> str:
        """The task's name in the memory and the guild: its name and its data's fingerprint
        (``mlguild.task.identity``); the name alone for a run made before fingerprints."""
        snapshot = json.loads((self.path / "task.json").read_text())
        return task_key(self.spec.name, snapshot.get("fingerprint"))

    @property
    def profile(self) -> DataProfile:
        return DataProfile.from_dict(json.loads((self.path / "profile.json").read_text()))

    def close(self) -> None:
        self.journal.close()
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


def take_lock(path: Path) -> int:
    """The run's writer lock, taken before the journal is opened: two writers would corrupt it,
    and opening a journal repairs (truncates) what looks like a torn tail."""
    fd = os.open(path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunError(
            f"another mlguild process is working on {path}",
            f"wait for it to finish, or stop it (`fuser {path / '.lock'}` shows its pid)",
        ) from None
    return fd


def create_run(task: Task, config: Config, runs_dir: Path, run_id: str | None = None) -> RunDir:
    """Create the run directory: config, task snapshot, firewalled workspace (verified), profile.

    Nothing is written outside ``runs_dir/<run-id>`` (and its hidden ``.partial`` twin while
    it is built). A problem with the runs folder (full, read-only, a file) is a RunError."""
    run_id = check_run_id(run_id) if run_id is not None else new_run_id(task.spec.name)
    _not_among_the_data(Path(runs_dir), task)
    with _writing(Path(runs_dir), run_id):
        runs = _runs_folder(Path(runs_dir))
        path, partial = runs / run_id, runs / f".{run_id}.partial"
        if path.exists() or path.is_symlink():
            raise _exists(path, task)
        lock_fd = _claim(partial)
        try:
            floor, prior_floor, prior_skipped, checked = _build(task, config, partial)
            with Journal(partial / "journal.jsonl") as journal:
                events.run_started(
                    journal,
                    run_id=run_id,
                    task=task.spec.name,
                    source=task.spec.source,
                    verified_files=checked,
                    floor_score=floor,
                    prior_floor_score=prior_floor,
                    **({"prior_floor_skipped": prior_skipped} if prior_skipped else {}),
                    scorer_sha256=fingerprint(),
                    holdout_split=_split_summary(partial),
                )
            os.rename(partial, path)  # the run appears whole, or not at all
            fsync_dir(runs)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)  # a half-built run is worse than none
            os.close(lock_fd)
            raise
    # The lock taken on the partial folder's .lock moved with it: it is this run's lock now.
    if python_file.is_python(task.spec.metric):  # from now on the run's nodes score with its sealed copy
        python_file.bind(python_file.parse(task.spec.metric)[0], path / "sealed" / python_file.SEALED_NAME)
    journal = Journal(path / "journal.jsonl")
    return RunDir(path, config, task.spec, task.description, journal, lock_fd)


def _build(task: Task, config: Config, path: Path) -> tuple[float | None, float | None, str | None, int]:
    """Everything of a run but its journal; returns (the sample submission's floor score, the
    training prior's floor score, why there is none when it could not be made, files verified)."""
    save_config(config, path / "config.yaml")
    snapshot = {
        "spec": task.spec.model_dump(),
        "root": str(task.root),
        "description": task.description,
        "fingerprint": data_fingerprint(task.train_path),  # the task's identity across runs (task/identity)
    }
    (path / "task.json").write_text(json.dumps(snapshot, indent=2))
    ws = build_workspace(task, path, config.firewall)
    report = verify_workspace(path, task.spec.id_column, task.spec.target_columns)
    if not report.ok:
        raise RunError(
            f"firewall verification failed: {report.problems}", "report this as a bug; the run was not started"
        )
    if python_file.is_python(task.spec.metric):  # the run scores with its own sealed copy of the user's metric
        name, copy = python_file.parse(task.spec.metric)[0], ws.sealed_dir / python_file.SEALED_NAME
        shutil.copyfile(task.root / name, copy)  # bound once the run has its final path (create_run)
        copy.chmod(0o600)
    confirm = confirm_ids(ws.data_dir, ws.sealed_dir, task.spec.id_column)  # floors are the holdout part's
    with split_predictions(ws.data_dir / HOLDOUT_SAMPLE, confirm, task.spec.id_column) as (sample, _):
        floor = floor_score(task.spec, sample, ws.holdout_answers, "holdout labels")
    prior = path / "prior_holdout.csv"  # the best constant, scored, then not kept
    prior_floor, prior_skipped = None, None
    try:
        if write_prior_submission(task.spec, ws.data_dir / task.spec.train_file, ws.data_dir / HOLDOUT_SAMPLE, prior):
            with split_predictions(prior, confirm, task.spec.id_column) as (part, _):
                prior_floor = floor_score(task.spec, part, ws.holdout_answers, "holdout labels")
    except (TaskError, ValueError, KeyError) as exc:
        # The prior is a second, stronger floor: a shape it cannot be made for keeps the
        # sample submission's floor, and the reason stays in the run folder.
        prior_skipped = f"no training-prior floor for this task: {exc}"
    finally:
        prior.unlink(missing_ok=True)
    if ws.test_answers is not None:
        floor_score(task.spec, ws.data_dir / task.spec.sample_submission, ws.test_answers, "test answers")
    profile = profile_workspace(ws.data_dir, {**task.spec.public_dict()})
    (path / "profile.json").write_text(json.dumps(profile.to_dict(), indent=2))
    (path / "nodes").mkdir()
    (path / "best").mkdir()
    return floor, prior_floor, prior_skipped, report.checked_files


def _split_summary(path: Path) -> dict:
    """How the holdout was cut (random, or the latest rows by the time column, and any warning),
    from the manifest: journaled so that the run's record says it."""
    split = Workspace(path).manifest()["split"]
    keep = ("kind", "time_column", "train_last", "holdout_first", "holdout_last", "groups", "warning")
    return {key: split[key] for key in keep if key in split}


def _not_among_the_data(runs_dir: Path, task: Task) -> None:
    """A runs folder inside the task's data folder would be copied into its own workspaces
    (and shown to scripts), unless it is the ``runs/`` a folder with its data beside task.yaml
    leaves out."""
    runs, data = runs_dir.expanduser().resolve(), task.public_dir.resolve()
    if not runs.is_relative_to(data):
        return
    if task.spec.data_dir == "." and runs.relative_to(data).parts[:1] == ("runs",):
        return
    raise RunError(
        f"the runs folder {runs} lies inside the task's data folder {data}",
        "pass --runs-dir outside it (or run from another folder)",
    )


def _runs_folder(runs_dir: Path) -> Path:
    runs = runs_dir.expanduser().resolve()
    if runs.exists() and not runs.is_dir():
        raise RunError(
            f"the runs folder {runs} is a file, not a folder",
            "pass a folder: --runs-dir runs (it is created when missing)",
        )
    runs.mkdir(parents=True, exist_ok=True)
    return runs


def _claim(partial: Path) -> int:
    """Make ``partial`` afresh and lock it. One left by a killed creation is removed; one
    whose lock is held belongs to a creation still under way."""
    if partial.exists():
        os.close(take_lock(partial))  # raises when another process is building it
        shutil.rmtree(partial)
    try:
        partial.mkdir()
    except FileExistsError:
        raise RunError(
            f"another mlguild process is creating {partial.name[1 : -len('.partial')]} in {partial.parent}",
            "wait for it, or pick another --run-id",
        ) from None
    return take_lock(partial)


def _exists(path: Path, task: Task) -> RunError:
    if (path / "journal.jsonl").exists():
        return RunError(
            f"run {path} already exists", f"resume it with `mlguild resume {path}`, or pick another --run-id"
        )
    return _half_built(path, str(task.root))


def _half_built(path: Path, task_root: str | None = None, run_id: str | None = None) -> RunError:
    """The error for a run folder whose creation never finished (a kill, or an older mlguild)."""
    if task_root is None:
        try:
            task_root = json.loads((path / "task.json").read_text())["root"]
        except (OSError, ValueError, KeyError, TypeError):
            task_root = "TASK"
    run_id = run_id or path.name
    return RunError(
        f"{path} is a half-built run: its creation was interrupted before it was complete, "
        "so there is nothing to resume",
        f"delete it and start again: `rm -rf {path} && mlguild run {task_root} "
        f"--runs-dir {path.parent} --run-id {run_id}`",
    )


@contextmanager
def _writing(runs_dir: Path, run_id: str) -> Iterator[None]:
    """An OSError while creating a run (a full or read-only disk, a file where a folder should
    be) becomes a RunError that names the path and the fix."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or runs_dir
        fixes: dict[int | None, str] = {  # keyed by OSError.errno, which may be None
            errno.ENOSPC: "free disk space there, or pass --runs-dir on another disk",
            errno.EDQUOT: "free disk space there, or pass --runs-dir on another disk",
            errno.EROFS: "pass --runs-dir on a writable disk",
            errno.EACCES: f"make {Path(where).parent} writable, or pass --runs-dir to a folder you can write",
            errno.EPERM: f"make {Path(where).parent} writable, or pass --runs-dir to a folder you can write",
            errno.ENOTDIR: "--runs-dir and the folders above it must be folders, not files",
            errno.EEXIST: "--runs-dir and the folders above it must be folders, not files",
            errno.ENAMETOOLONG: "use a shorter --runs-dir or --run-id",
        }
        raise RunError(
            f"cannot create run {run_id} in {runs_dir}: {exc.strerror or exc} ({short(str(where))})",
            fixes.get(exc.errno, f"check that {runs_dir} is a folder you can write"),
        ) from None


def floor_score(spec: TaskSpec, submission: Path, answers: Path, what: str) -> float | None:
    """The score of a constant template (a sample submission) against sealed answers: the floor
    every real model must beat. Scoring it at creation also proves that the answers and the
    scorer agree, so a broken answers file is found now, not after hours of search. None when
    the metric's value is not a finite number (Score keeps no NaN or infinity)."""
    from ..metrics import get_metric
    from ..util.exact_csv import read_csv_exact

    # The template's own labels are its to predict, even a stand-in value that is no class.
    template = (
        set(read_csv_exact(submission)[spec.prediction_columns].to_numpy().ravel().tolist())
        if get_metric(spec.metric).prediction == "label"
        else set()
    )
    try:
        score = Scorer.from_file(spec, answers, max_bytes=None, labels=template).score(submission)
    except SubmissionError as exc:
        raise TaskError(
            f"the task's sample submission does not match its {what} ({exc.reason}): {exc.message}",
            "make the sample submission's ids and columns match the answers",
        ) from exc
    except ValueError as exc:
        raise TaskError(
            f"the {what} cannot be scored: {exc}",
            "check the metric, positive_label/classes and answers in task.yaml and private/",
        ) from exc
    return score.value


def check_run_dir(path: Path) -> None:
    """RunError unless ``path`` is a complete run folder: it says when it is half-built."""
    listing = "list runs with `ls runs/` (or the folder given as --runs-dir)"
    match = _PARTIAL.fullmatch(path.name)
    if match:
        raise _half_built(path, run_id=match.group(1))
    if not path.exists():
        partial = path.parent / f".{path.name}.partial"
        if partial.is_dir():
            raise _half_built(partial, run_id=path.name)
        raise RunError(f"{path} is not a run directory: it does not exist", listing)
    if not path.is_dir():
        raise RunError(f"{path} is not a run directory: it is a file", listing)
    if not (path / "journal.jsonl").exists():
        if any((path / name).exists() for name in ("task.json", "config.yaml", "workspace", "sealed")):
            raise _half_built(path)
        raise RunError(f"{path} is not a run directory (no journal.jsonl/task.json)", listing)


def open_run(path: str | Path) -> RunDir:
    """Open an existing run directory (for resume, status, show)."""
    path = Path(path).expanduser().resolve()
    check_run_dir(path)
    if not (path / "task.json").exists():
        raise RunError(f"{path} is not a run directory (no task.json)", "list runs with `ls runs/`")
    try:
        config = Config.model_validate(yaml.safe_load((path / "config.yaml").read_text()))
        snapshot = json.loads((path / "task.json").read_text())
        spec = TaskSpec.model_validate(snapshot["spec"])
    except (OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        raise RunError(
            f"{path} is incomplete or damaged ({type(exc).__name__}: {exc})", "start a new run with `mlguild run TASK`"
        ) from exc
    if python_file.is_python(spec.metric) and (path / "sealed" / python_file.SEALED_NAME).is_file():
        # unchecked: a run whose metric file broke can still be shown; scoring says what is wrong
        python_file.bind(python_file.parse(spec.metric)[0], path / "sealed" / python_file.SEALED_NAME, check=False)
    lock_fd = take_lock(path)
    try:
        journal = Journal(path / "journal.jsonl")
    except BaseException:
        os.close(lock_fd)
        raise
    return RunDir(path, config, spec, snapshot.get("description", ""), journal, lock_fd)


def scorers_for(run: RunDir, fingerprint: str) -> RunScorers:
    """The scorers of ``run``; ``fingerprint`` is the one taken when the run started."""
    spec, ws = run.spec, run.workspace
    options: dict[str, Any] = {"fingerprint": fingerprint, "max_bytes": run.config.scorer.max_submission_bytes}
    holdout = Scorer.from_file(spec, ws.holdout_answers, **options)
    labels = holdout.labels or ()
    sample_ids = read_table(ws.data_dir / spec.sample_submission, max_bytes=None)
    test_ids = sample_ids[1][sample_ids[0].index(spec.id_column)]
    test = Scorer(spec, expected_ids=test_ids, labels=labels, **options)
    answers = ws.test_answers
    grade = Scorer.from_file(spec, answers, labels=labels, **options) if answers is not None else None
    return RunScorers(holdout, test, grade, fingerprint)
