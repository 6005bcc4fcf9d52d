"""Task: a competition-style problem, loaded from a task folder (its task.yaml: task_spec.py).

A task folder has the MLE-bench layout plus our ``task.yaml``::

    <task>/
      task.yaml            metric, columns, task type, file names (TaskSpec)
      description.md       the competition text (or public/description.md, as MLE-bench has it)
      public/              what a script may read: train, test inputs, sample submission, extras
      private/             test answers, when known (never shown to scripts)

A Kaggle download keeps its files beside ``task.yaml`` instead (``data_dir: .``); then every
file of the folder but ``task.yaml``, ``brief.md``, ``competition.json`` (Kaggle's metadata),
``knowledge/`` (community material, ``mlguild.task.knowledge``), ``private/``, ``runs/`` and hidden
ones is public.
Other sources (a CSV, a bundled example) are converted into this layout by ``mlguild init``;
a competition folder without ``task.yaml`` gets one inferred (``mlguild.sources.infer``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from ..core.errors import MlguildError, TaskError
from ..metrics import python_file
from .spec import NOT_DATA, TaskSpec, short


@dataclass(frozen=True)
class Task:
    """A loaded, validated task folder."""

    root: Path
    spec: TaskSpec
    description: str

    @property
    def public_dir(self) -> Path:
        return self.root / self.spec.data_dir

    def public_files(self) -> list[Path]:
        """Every public file, sorted (links skipped: they could lead anywhere). With the data
        beside task.yaml, the task's own files, private/ and hidden files are left out."""
        found = []
        for path in sorted(self.public_dir.rglob("*")):
            rel = path.relative_to(self.public_dir)
            if self.spec.data_dir == "." and (rel.parts[0] in NOT_DATA or rel.parts[0].startswith(".")):
                continue
            if path.is_file() and not path.is_symlink():
                found.append(path)
        return found

    @property
    def private_dir(self) -> Path:
        return self.root / "private"

    @property
    def train_path(self) -> Path:
        return self.public_dir / self.spec.train_file

    @property
    def test_path(self) -> Path:
        return self.public_dir / self.spec.test_file

    @property
    def sample_submission_path(self) -> Path:
        return self.public_dir / self.spec.sample_submission

    @property
    def answers_path(self) -> Path | None:
        """Sealed test answers, or None when the task has none (e.g. a live Kaggle competition)."""
        if not self.spec.answers_file:
            return None
        path = self.private_dir / self.spec.answers_file
        return path if path.exists() else None


def test_gap(task: Task) -> str | None:
    """A warning when the test file lacks input columns of the train file (a model trained on
    them cannot predict the test rows; scripts must leave them out), else None."""
    if not (task.train_path.is_file() and task.test_path.is_file()):
        return None
    test = set(read_header(task.test_path))
    skip = {task.spec.id_column, *task.spec.target_columns}
    lacking = [c for c in read_header(task.train_path) if c not in test and c not in skip]
    if not lacking:
        return None
    shown = ", ".join(lacking[:10]) + (f", … ({len(lacking) - 10} more)" if len(lacking) > 10 else "")
    return (
        f"{task.spec.test_file} lacks {len(lacking)} column(s) of {task.spec.train_file}: {shown}; "
        "no model can use them as inputs (the brief says so)"
    )


def read_header(path: Path) -> list[str]:
    """The first CSV row of ``path``, as written (a BOM is dropped). Raises TaskError if unreadable."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TaskError(f"cannot read {path}: {exc}", "check that the file is a UTF-8 CSV") from exc
    if not header:
        raise TaskError(f"{path} is empty", "put the header row and data rows in it")
    return header


def load_task(root: str | Path) -> Task:
    """Load and validate a task folder. Raises TaskError saying what is wrong and how to fix it.

    Every file the spec names must lie inside the task's public/ (or private/) folder, links
    resolved: this is checked here, before a run writes anything."""
    try:
        root = Path(root).expanduser().resolve()
        is_dir, is_file = root.is_dir(), root.is_file()
    except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
        raise TaskError(
            f"cannot open the task folder {short(str(root))}: {exc}",
            "give the path of a task folder (one with task.yaml)",
        ) from None
    if is_file:
        raise TaskError(
            f"{root} is a file, not a task folder",
            f"convert a CSV into one with `mlguild init csv:{root} --target COLUMN`",
        )
    if not is_dir:
        raise TaskError(
            f"task folder {root} does not exist",
            "create one with `mlguild init csv:train.csv --target COLUMN` or `mlguild init example:churn`",
        )
    spec = _read_spec(root)
    if python_file.is_python(spec.metric):  # the user's metric: beside task.yaml, imported now
        name = python_file.parse(spec.metric)[0]
        if not (root / name).is_file():
            raise TaskError(
                f"the metric {spec.metric} names the file {name}, which is not in {root}",
                f"put {name} beside task.yaml, or correct metric in {root}/task.yaml",
            )
        python_file.bind(name, root / name)
    description = _read_description(root, spec)
    task = Task(root=root, spec=spec, description=description)
    _check_inside(task)
    _check_files(task)
    return task


def _read_spec(root: Path) -> TaskSpec:
    spec_path = root / "task.yaml"
    if not spec_path.exists():
        raise TaskError(
            f"{root} has no task.yaml (metric, id and target columns)",
            f"write one (see docs/guides/task-folders.md) or convert a CSV with `mlguild init csv:{root}/public/train.csv --target COLUMN`",
        )
    try:
        raw = yaml.safe_load(spec_path.read_text()) or {}
        return TaskSpec.model_validate(raw)
    except yaml.YAMLError as exc:
        raise TaskError(f"{spec_path} is not valid YAML: {exc}", f"fix the syntax in {spec_path}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'task.yaml'}: {e['msg']}" for e in exc.errors())
        if any(e["type"] == "extra_forbidden" for e in exc.errors()):
            problems += f" (the known keys: {', '.join(TaskSpec.model_fields)})"
        raise TaskError(f"{spec_path} is invalid: {problems}", f"edit {spec_path}") from exc
    except MlguildError as exc:  # an unknown metric, a mean of metrics that cannot be: its own fix
        raise TaskError(f"{spec_path} is invalid: {exc.message}", f"edit {spec_path}: {exc.fix}") from exc
    except Exception as exc:  # an unreadable file and similar
        raise TaskError(f"{spec_path} is invalid: {exc}", f"edit {spec_path}") from exc


def _read_description(root: Path, spec: TaskSpec) -> str:
    for candidate in (root / "description.md", root / spec.data_dir / "description.md"):
        if candidate.is_file():
            try:
                return candidate.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise TaskError(f"cannot read {candidate}: {exc}", f"make {candidate} a readable text file") from exc
    if spec.description:
        return spec.description
    raise TaskError(
        f"{root} has no description.md",
        f"write a few lines describing the task into {root}/description.md",
    )


def _check_inside(task: Task) -> None:
    """Each named file, links resolved, lies inside public/ (private/ for the answers). The
    names themselves were checked by TaskSpec; this catches a link that leads out of the task."""
    spec = task.spec
    named = [
        ("train_file", task.public_dir, spec.train_file),
        ("test_file", task.public_dir, spec.test_file),
        ("sample_submission", task.public_dir, spec.sample_submission),
    ]
    if spec.answers_file:
        named.append(("answers_file", task.private_dir, spec.answers_file))
    named += [("tables", task.public_dir, table.file) for table in spec.tables]
    for field, folder, name in named:
        try:
            target = (folder / name).resolve()
            inside = target.is_relative_to(folder.resolve())
        except (OSError, RuntimeError) as exc:
            raise TaskError(
                f"{field} {short(name)} cannot be resolved: {exc}", f"edit {field} in {task.root}/task.yaml"
            ) from None
        if not inside:
            raise TaskError(
                f"{field} {short(name)} leads outside {folder} (a link to {short(str(target))})",
                f"copy the file into {folder} instead of linking to it, or edit {field} in {task.root}/task.yaml",
            )


def _check_files(task: Task) -> None:
    spec = task.spec
    if not task.public_dir.is_dir():
        raise TaskError(
            f"{task.root} has no {task.spec.data_dir}/ folder",
            f"put train, test and sample submission files in {task.spec.data_dir}/",
        )
    for label, path in (
        ("train", task.train_path),
        ("test", task.test_path),
        ("sample submission", task.sample_submission_path),
    ):
        if not path.exists():
            raise TaskError(
                f"{label} file {path} is missing", f"add it, or set the right file name in {task.root}/task.yaml"
            )

    train_header = read_header(task.train_path)
    _no_duplicate_columns(train_header, task.train_path)
    missing = [c for c in [spec.id_column, *spec.target_columns] if c not in train_header]
    if missing:
        raise TaskError(
            f"{task.train_path} lacks column(s) {missing}; it has {train_header[:20]}",
            f"fix id_column/target_columns in {task.root}/task.yaml",
        )
    test_header = read_header(task.test_path)
    _no_duplicate_columns(test_header, task.test_path)
    if spec.id_column not in test_header:
        raise TaskError(f"{task.test_path} has no id column {spec.id_column!r}", "add the id column to the test file")
    leaked = [c for c in spec.target_columns if c in test_header]
    if leaked:
        raise TaskError(
            f"{task.test_path} contains the target column(s) {leaked}",
            "move test answers to private/answers.csv and drop them from public/",
        )
    for header, path in ((train_header, task.train_path), (test_header, task.test_path)):
        absent = [c for c in spec.key_columns if c not in header]
        if absent:  # key columns are copied from the test rows (and the holdout's from train's)
            which = "group_column/key_columns" if spec.group_column in absent else "key_columns"
            raise TaskError(
                f"{path} has no key column(s) {absent}; it has {header[:20]}",
                f"fix {which} in {task.root}/task.yaml",
            )
    if spec.file_column is not None:
        for header, path in ((train_header, task.train_path), (test_header, task.test_path)):
            if spec.file_column not in header:
                raise TaskError(
                    f"{path} has no file column {spec.file_column!r}", f"fix file_column in {task.root}/task.yaml"
                )
        for field, name in (("train_files", spec.train_files), ("test_files", spec.test_files)):
            if not (task.public_dir / str(name)).is_dir():
                raise TaskError(
                    f"{field} {short(name)} is not a folder in {task.public_dir}",
                    f"fix {field} in {task.root}/task.yaml",
                )
    for table in spec.tables:
        _check_table(task, table.file, table.key, table.join_columns, train_header, test_header)
    sample_header = read_header(task.sample_submission_path)
    if sample_header != spec.submission_columns:
        raise TaskError(
            f"sample submission header {sample_header} differs from submission_columns {spec.submission_columns}",
            f"make submission_columns in {task.root}/task.yaml match {task.sample_submission_path}",
        )
    if spec.task_type in ("binary", "multiclass") and spec.metric == "logloss" and not spec.classes:
        raise TaskError(
            "a logloss task needs 'classes' (the probability columns)", f"add classes to {task.root}/task.yaml"
        )


def _check_table(
    task: Task, file: str, key: list[str], on: list[str], train_header: list[str], test_header: list[str]
) -> None:
    """A lookup table of tables: lies in the data folder and holds its key; train and test hold theirs."""
    path = task.public_dir / file
    if not path.is_file():
        raise TaskError(f"table {path} is missing", f"add it, or fix tables in {task.root}/task.yaml")
    header = read_header(path)
    if absent := [c for c in key if c not in header]:
        raise TaskError(
            f"table {path} has no key column(s) {absent}; it has {header[:20]}", f"fix key in {task.root}/task.yaml"
        )
    for columns, source in ((train_header, task.train_path), (test_header, task.test_path)):
        if absent := [c for c in on if c not in columns]:
            raise TaskError(
                f"{source} has no column(s) {absent} to join table {file} on",
                f"name its columns with train_key: in {task.root}/task.yaml",
            )


def _no_duplicate_columns(header: list[str], path: Path) -> None:
    seen = set()
    for name in header:
        if name in seen:
            raise TaskError(f"{path} has the column {short(name)} twice", "rename one of them")
        seen.add(name)
