"""Which task a user means: a task folder (a competition folder without task.yaml gets one
inferred), or a source (``example:NAME``, ``csv:PATH``) built into ``$MLGUILD_HOME/tasks``.
What inference found is said through ``say`` (the CLI prints it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..config import mlguild_home
from ..core.errors import TaskError
from ..task.folder import Task, load_task
from . import init_task
from .convert_folder import converted_folder, write_converted, write_inferred
from .infer import Inferred, find_task_root, infer_task


def _quiet(line: str) -> None:
    """Say nothing (the default for library callers)."""


def resolve_task(
    source: str,
    target: str | None = None,
    fresh: bool = False,
    metric: str | None = None,
    say: Callable[[str], None] = _quiet,
) -> Task:
    """A task folder path, or a source (example:NAME, csv:PATH) built into $MLGUILD_HOME/tasks.
    A competition folder without task.yaml gets one inferred (``--target`` and ``--metric``
    decide what the folder cannot)."""
    if ":" not in source or path_exists(Path(source)):
        return folder_task(Path(source), target, metric, say=say)
    kind, _, rest = source.partition(":")
    dest = mlguild_home() / "tasks" / task_name(kind, rest)
    if dest.exists() and (dest / "task.yaml").exists() and not fresh and kind == "example":
        return load_task(dest)
    options: dict[str, object] = {"metric": metric} if kind == "csv" and metric else {}
    if kind == "csv":
        options["say"] = say  # what was decided about time order
    if metric and kind != "csv":
        raise TaskError(f"--metric does not apply to {kind}: sources", f"run {source} without it")
    return load_task(init_task(source, dest, target=target, overwrite=True, **options))


def folder_task(
    folder: Path, target: str | None, metric: str | None, write: bool = True, say: Callable[[str], None] = _quiet
) -> Task:
    """The task of a folder; one without task.yaml gets it inferred, and written unless
    ``write`` is False (a command that promises to write nothing, such as `mlguild grade`)."""
    root = folder
    if path_exists(folder) and folder.is_dir() and not (folder / "task.yaml").exists():
        root = find_task_root(folder)[0]
        if not (root / "task.yaml").exists():
            inferred = infer_task(folder, target=target, metric=metric)
            if inferred.converted:  # files of its own (a test table, an id column): a folder of mlguild's own
                return _converted(folder, inferred, say)
            if not write:
                description = next(
                    (
                        p.read_text(errors="replace")
                        for p in (root / "description.md", root / inferred.spec.data_dir / "description.md")
                        if p.is_file()
                    ),
                    inferred.spec.description or "",
                )
                return Task(root=root.resolve(), spec=inferred.spec, description=description)
            written = write_inferred(inferred)
            say(f"no task.yaml in {folder}: inferred one")
            for note in inferred.notes:
                say(f"  {note}")
            say(f"  wrote {written} (edit it to change any of these; nothing else was written there)")
            return load_task(root)
    task = load_task(root)
    for option, given, known in (
        ("--target", target, task.spec.target_columns),
        ("--metric", metric, [task.spec.metric]),
    ):
        # --target a,b names several targets
        wanted = [g.strip() for g in given.split(",")] if given is not None and option == "--target" else [given]
        if given is not None and wanted != known:
            raise TaskError(
                f"{option} {given} disagrees with {task.root / 'task.yaml'} ({', '.join(known)})",
                f"edit {task.root / 'task.yaml'}, or delete it to have it inferred again",
            )
    return task


def _converted(folder: Path, inferred: Inferred, say: Callable[[str], None]) -> Task:
    """The task of a folder that needs files of its own (its sample submission alone lists the test
    rows, or its submission's id is made of other columns), converted into ``$MLGUILD_HOME/tasks``
    (the user's folder is left as it is; see sources/convert_folder)."""
    dest = converted_folder(mlguild_home(), folder, inferred.spec.name)
    try:
        written = write_converted(
            inferred.spec,
            inferred.root,
            dest,
            inferred.test_rows,
            inferred.made_of,
            inferred.indexed,
            inferred.retyped,
            inferred.nested,
            inferred.labelled,
            inferred.unpacked,
            inferred.shards,
            inferred.arrays,
            inferred.sample_columns,
            inferred.blank,
            inferred.labels_file,
            inferred.numbered,
            inferred.positions,
        )
    except OSError as exc:
        raise TaskError(
            f"cannot write the task folder {dest}: {exc.strerror or exc} ({exc.filename or dest})",
            "set MLGUILD_HOME to a writable folder with free space",
        ) from None
    say(f"no task.yaml in {folder}: inferred the task and converted the folder into a task folder of its own")
    for note in inferred.notes:
        say(f"  {note}")
    say(
        f"  wrote {written} and linked the folder's files beside it (nothing was written in {folder}); "
        f"edit it and run {dest} to change any of these"
    )
    return load_task(dest)


def task_name(kind: str, rest: str) -> str:
    """The folder name of a task built from a source: plain characters only, so that a name
    like '..' can never make the folder (which is replaced when rebuilt) a parent folder."""
    raw = rest if kind == "example" else Path(rest).stem
    return re.sub(r"[^\w.-]+", "-", raw).strip(".-") or "task"


def path_exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False
