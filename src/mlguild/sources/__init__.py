"""Task sources: each converts something (a bundled example, a CSV) into a task folder.

``init_task("example:churn", dest)`` or ``init_task("csv:train.csv", dest, target=...)``.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import TaskError


def init_task(source: str, dest: Path, **options) -> Path:
    """Build a task folder at ``dest`` from ``source`` and return it. A file-system problem
    (a full or read-only disk, a file where a folder should be) is a TaskError."""
    try:
        return _init_task(source, Path(dest), **options)
    except OSError as exc:
        where = exc.filename or dest
        raise TaskError(
            f"cannot write the task folder {dest}: {exc.strerror or exc} ({where})",
            "pass --out (or set MLGUILD_HOME) to a writable folder with free space",
        ) from None


def _init_task(source: str, dest: Path, **options) -> Path:
    kind, _, rest = source.partition(":")
    if kind == "example" and rest:
        from .examples import build_example

        if options.get("target"):
            raise TaskError("--target does not apply to bundled examples", f"run `mlguild init {source}` without it")
        return build_example(rest, dest)
    if kind == "csv" and rest and "," in str(options.get("target") or ""):
        from .csv_several import build_several_from_csv  # --target a,b,c

        several = {k: v for k, v in options.items() if k not in ("time_column", "group", "say")}
        for option, flag in (("time_column", "--time-column"), ("group", "--group")):
            if options.get(option) is not None:
                raise TaskError(
                    f"{flag} takes a task of one target; --target names several", f"drop {flag}, or name one target"
                )
        return build_several_from_csv(Path(rest), dest, **several)
    if kind == "csv" and rest:
        from .csv_source import build_from_csv

        return build_from_csv(Path(rest), dest, **options)
    raise TaskError(
        f"unknown task source {source!r}",
        "use example:NAME (see `mlguild examples`) or csv:PATH --target COLUMN, or give a task folder",
    )
