"""A metric the user supplies as a Python file, named in task.yaml as
``python(metric.py, maximize)``: the file (in the task folder) defines ``score(y_true, y_pred)``
returning a float, and the name declares its direction, since nobody else can. Options after the
direction: what the submission holds (``value``, the default; ``probability``; ``label``) and
``grouped`` (``score`` then also takes ``groups``, one group per row, for a ranking).

The harness runs it, outside the sandbox, on sealed labels, like every other metric: the
scorer calls it with the truth and the predictions it has already read and checked (floats;
0/1 for ``probability``; the label strings for ``label``). Its name is all a spec needs, so a
run's spec is read anywhere; scoring needs the file, bound by name with ``bind`` when the task
is loaded (the task folder's copy) and when a run opens (the run's sealed copy). A file that
cannot be imported, a ``score`` that raises or returns no finite number, is a ``MetricFileError``
of one line naming the file (and the line of it that failed)."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
import traceback
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from mlguild.core.errors import TaskError

_NAME = re.compile(r"^python\((?P<args>.*)\)$", re.IGNORECASE)
KINDS = ("value", "probability", "label")
SEALED_NAME = "metric_file.py"  # the run's copy, in sealed/: read by the harness alone
_BOUND: dict[str, Path] = {}  # file name as the metric names it -> the file the harness runs
_LOADED: dict[tuple[Path, str], ModuleType] = {}


class MetricFileError(TaskError):
    """The user's metric file failed: it cannot be imported, or ``score`` raised or returned no
    finite number. The run stops: no score can be trusted until the file is fixed."""


def is_python(name: str) -> bool:
    return bool(_NAME.match(name.strip()))


def parse(name: str) -> tuple[str, str, str, bool]:
    """(file name, direction, prediction kind, grouped) of ``python(FILE, DIRECTION[, KIND][, grouped])``;
    ValueError naming what is wrong."""
    found = _NAME.match(name.strip())
    args = [a.strip() for a in found["args"].split(",")] if found else []
    usage = "write python(metric.py, maximize) or python(metric.py, minimize[, value|probability|label][, grouped])"
    if len(args) < 2 or not args[0]:
        raise ValueError(f"{name!r} needs the file and its direction: {usage}")
    path, direction, options = args[0], args[1].lower(), [a.lower() for a in args[2:]]
    if PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts or not path.endswith(".py"):
        raise ValueError(f"{name!r}: the metric file must be a .py file inside the task folder, e.g. metric.py")
    if direction not in ("maximize", "minimize"):
        raise ValueError(f"{name!r}: declare its direction, maximize or minimize, not {args[1]!r}; {usage}")
    unknown = [o for o in options if o not in (*KINDS, "grouped")]
    if unknown:
        raise ValueError(f"{name!r}: unknown option(s) {unknown}; {usage}")
    kinds = [o for o in options if o in KINDS]
    return path, direction, kinds[0] if kinds else "value", "grouped" in options


def spelled(path: str, direction: str, kind: str, grouped: bool) -> str:
    return f"python({path}, {direction}" + ("" if kind == "value" else f", {kind}") + (", grouped)" if grouped else ")")


def bind(file_name: str, path: Path, check: bool = True) -> None:
    """Score the metric file ``file_name`` with ``path`` from now on; with ``check``, import it at
    once, so a file that cannot be imported is said before a run starts (MetricFileError)."""
    _BOUND[file_name] = path
    if check:
        _module(file_name)


def _module(file_name: str) -> ModuleType:
    path = _BOUND.get(file_name)
    if path is None:
        raise MetricFileError(
            f"the metric file {file_name} is not loaded",
            "score with the task loaded (mlguild run TASK), or a run opened (mlguild resume RUN)",
        )
    try:
        code = path.read_bytes()
    except OSError as exc:
        raise MetricFileError(
            f"cannot read the metric file {path}: {exc}", f"put {file_name} in the task folder"
        ) from None
    key = (path, hashlib.sha256(code).hexdigest())
    if key in _LOADED:
        return _LOADED[key]
    spec = importlib.util.spec_from_file_location(f"mlguild_metric_{key[1][:12]}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as exc:  # its import is the user's code: any failure is the file's
        raise MetricFileError(
            f"the metric file {file_name} cannot be imported: {_why(exc, path)}", _fix(path)
        ) from None
    if not callable(getattr(module, "score", None)):
        raise MetricFileError(f"the metric file {file_name} defines no function score(y_true, y_pred)", _fix(path))
    _LOADED[key] = module
    return module


def _why(exc: BaseException, path: Path) -> str:
    """``Type: message`` of ``exc``, one line, with the last line of ``path`` it passed through."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if isinstance(exc, SyntaxError) and exc.lineno:
        lines.append(exc.lineno)
    message = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {message}" + (f" (line {lines[-1]})" if lines else "")


def _fix(path: Path) -> str:
    if path.name == SEALED_NAME:  # a run's copy: the task folder's file is what the user edits
        return f"fix the metric file in the task folder and start the run again (this run scores with {path})"
    return f"fix {path}, then run the task again"


def function(file_name: str, grouped: bool) -> Callable[..., float]:
    """The Metric function: the file's ``score``, run and checked."""

    def fn(y_true: Any, y_pred: Any, groups: Any = None) -> float:
        module = _module(file_name)
        path = _BOUND[file_name]
        try:
            value = module.score(y_true, y_pred, groups=groups) if grouped else module.score(y_true, y_pred)
            number = float(value)
        except Exception as exc:
            raise MetricFileError(f"the metric file {file_name} failed: {_why(exc, path)}", _fix(path)) from None
        if not math.isfinite(number):
            raise MetricFileError(f"the metric file {file_name} returned {value!r}, not a finite number", _fix(path))
        return number

    return fn
