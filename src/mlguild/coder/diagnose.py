"""Reading a failed script's output: which exception, in which step, on which column.

Recipe scripts end a crash with one line that names the step and column they were in
(``failed in step 'columns', column 'created': TypeError: ...``, see the recipe template).
Other scripts (an LLM's) have only the traceback: then the step is the section of the
script the last frame points into, and the column is one the message names. A repair
uses the diagnosis to change exactly the failing part; the loop uses it to say what
really broke when every node fails the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..util import pysource
from .failures import parse_last_traceback

_STEP_LINE = re.compile(
    r"^failed in step '(?P<step>[\w ]+)'(?:, column (?P<column>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?: "
    r"(?P<exception>[\w.]+): ?(?P<message>.*)$",
    re.MULTILINE,
)
_EXCEPTION = re.compile(r"^(?P<exception>[A-Za-z_][\w.]*)(?:: (?P<message>.*))?$")
_STEP_CALL = re.compile(r"""^\s*step\(["'](\w+)["']""")
_SECTION = re.compile(r"^# -{8,} (\w[\w ]*)$")
_QUOTED = re.compile(r"'([^'\n]{1,200})'|\"([^\"\n]{1,200})\"")


@dataclass(frozen=True)
class Diagnosis:
    """What a failure says about its cause; every field may be unknown (None)."""

    exception: str | None = None  # the exception's class name, e.g. "TypeError"
    message: str = ""  # its message, first line, bounded
    step: str | None = None  # the script's step (or section) when it failed
    column: str | None = None  # the input column it was working on
    line: int | None = None  # the line of solution.py in the last traceback frame

    def summary(self) -> str:
        """One line: "TypeError in step 'columns' on column 'created': Cannot subtract ..."."""
        where = "".join(
            [
                f" in step {self.step!r}" if self.step else "",
                f" on column {self.column!r}" if self.column is not None else "",
            ]
        )
        what = self.exception or "a failure"
        return f"{what}{where}: {self.message}" if self.message else f"{what}{where}"

    def signature(self) -> tuple[str | None, str | None, str | None, str]:
        """What two failures must share to be "the same failure" (paths and row numbers in
        the message may differ; the first 120 characters of it may not)."""
        return self.exception, self.step, self.column, self.message[:120]


def diagnose(failure: str, code: str = "", columns: list[str] | tuple[str, ...] = ()) -> Diagnosis:
    """Diagnose ``failure`` (a node's failure text: the reason and the output's tail) of a
    script whose source is ``code``; ``columns`` are the task's input columns, which a
    message may name."""
    text = failure or ""
    traceback = parse_last_traceback(text)
    frame = traceback.script_frame() if traceback is not None else None
    line = frame.line if frame is not None else None
    named = list(_STEP_LINE.finditer(text))
    if named:
        found = named[-1]
        column = str(pysource.literal_eval(found["column"])) if found["column"] else None  # a quoted name
        return Diagnosis(found["exception"].rsplit(".", 1)[-1], _bounded(found["message"]), found["step"], column, line)
    raised = _EXCEPTION.match(traceback.exception.splitlines()[0]) if traceback and traceback.exception else None
    exception = raised["exception"].rsplit(".", 1)[-1] if raised else None
    message = _bounded(raised["message"] or "") if raised else _last_line(text)
    step = _step_at(code, line) if code and line else None
    return Diagnosis(exception, message, step, _column_named(message, columns), line)


def _step_at(code: str, line: int) -> str | None:
    """The step (a ``step("name")`` call) or section (``# ---- name``) that ``line`` is in."""
    for text in reversed(code.splitlines()[:line]):
        found = _STEP_CALL.match(text) or _SECTION.match(text)
        if found:
            return found.group(1)
    return None


def _column_named(message: str, columns: list[str] | tuple[str, ...]) -> str | None:
    """A column the message quotes by name (e.g. KeyError: 'price'), if exactly one."""
    known = set(columns)
    quoted = {a or b for a, b in _QUOTED.findall(message)} & known
    return quoted.pop() if len(quoted) == 1 else None


def _bounded(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return _bounded(lines[-1]) if lines else ""


__all__ = ["Diagnosis", "diagnose"]
