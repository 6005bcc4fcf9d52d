"""A run is a directory of plain files a human can read (layout in DESIGN.md).

This module creates and opens run directories; it owns their paths, the saved config and
the task snapshot, and opens the journal. It does not run anything.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from .config import Config, save_config
from .errors import RunError, SubmissionError, TaskError
from .firewall import HOLDOUT_SAMPLE, Workspace, build_workspace, verify_workspace
from .journal import Journal
from .profile import DataProfile, profile_workspace
from .scorer import fingerprint
from .task import Task, TaskSpec


def new_run_id(task_name: str) -> str:
    return f"{task_name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


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
        raise RunError(f"another mlguild process is working on {path}",
                       f"wait for it to finish, or stop it (`fuser {path / '.lock'}` shows its pid)") from None
    return fd


def create_run(task: Task, config: Config, runs_dir: Path, run_id: str | None = None) -> RunDir:
    """Create the run directory: config, task snapshot, firewalled workspace (verified), profile."""
    run_id = run_id or new_run_id(task.spec.name)
    path = Path(runs_dir).expanduser().resolve() / run_id
    if path.exists():
        raise RunError(f"run {path} already exists", f"resume it with `mlguild resume {path}`")
    path.mkdir(parents=True)
    try:
        save_config(config, path / "config.yaml")
        snapshot = {"spec": task.spec.model_dump(), "root": str(task.root), "description": task.description}
        (path / "task.json").write_text(json.dumps(snapshot, indent=2))
        ws = build_workspace(task, path, config.firewall)
        report = verify_workspace(path, task.spec.id_column, task.spec.target_columns)
        if not report.ok:
            raise RunError(f"firewall verification failed: {report.problems}", "report this as a bug; the run was not started")
        floor = floor_score(task.spec, ws.data_dir / HOLDOUT_SAMPLE, ws.holdout_answers, "holdout labels")
        if ws.test_answers is not None:
            floor_score(task.spec, ws.data_dir / task.spec.sample_submission, ws.test_answers, "test answers")
        profile = profile_workspace(ws.data_dir, {**task.spec.public_dict()})
        (path / "profile.json").write_text(json.dumps(profile.to_dict(), indent=2))
        (path / "nodes").mkdir()
        (path / "best").mkdir()
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)   # a half-built run is worse than none
        raise
    lock_fd = take_lock(path)
    journal = Journal(path / "journal.jsonl")
    journal.append("run_started", run_id=run_id, task=task.spec.name, source=task.spec.source,
                   verified_files=report.checked_files, floor_score=floor, scorer_sha256=fingerprint())
    return RunDir(path, config, task.spec, task.description, journal, lock_fd)


def floor_score(spec: TaskSpec, submission: Path, answers: Path, what: str) -> float:
    """The score of a constant template (a sample submission) against sealed answers: the floor
    every real model must beat. Scoring it at creation also proves that the answers and the
    scorer agree, so a broken answers file is found now, not after hours of search."""
    from .metrics import get_metric
    from .scorer import SubmissionFormat, load_answers, score_submission

    fmt = SubmissionFormat(spec.id_column, spec.submission_columns, spec.ids_unique)
    try:
        result = score_submission(submission, load_answers(answers, spec.id_column), fmt,
                                  get_metric(spec.metric), spec.target_columns, metric_params=spec.metric_params,
                                  positive_label=spec.positive_label, classes=spec.classes)
    except SubmissionError as exc:
        raise TaskError(f"the task's sample submission does not match its {what} ({exc.reason}): {exc.message}",
                        "make the sample submission's ids and columns match the answers") from exc
    except ValueError as exc:
        raise TaskError(f"the {what} cannot be scored: {exc}",
                        "check the metric, positive_label/classes and answers in task.yaml and private/") from exc
    return result.score.value


def open_run(path: str | Path) -> RunDir:
    """Open an existing run directory (for resume, status, show)."""
    path = Path(path).expanduser().resolve()
    if not (path / "journal.jsonl").exists() or not (path / "task.json").exists():
        raise RunError(f"{path} is not a run directory (no journal.jsonl/task.json)", "list runs with `ls runs/`")
    try:
        config = Config.model_validate(yaml.safe_load((path / "config.yaml").read_text()))
        snapshot = json.loads((path / "task.json").read_text())
        spec = TaskSpec.model_validate(snapshot["spec"])
    except (OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        raise RunError(f"{path} is incomplete or damaged ({type(exc).__name__}: {exc})",
                       "start a new run with `mlguild run TASK`") from exc
    lock_fd = take_lock(path)
    try:
        journal = Journal(path / "journal.jsonl")
    except BaseException:
        os.close(lock_fd)
        raise
    return RunDir(path, config, spec, snapshot.get("description", ""), journal, lock_fd)
