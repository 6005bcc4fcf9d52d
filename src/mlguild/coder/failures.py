"""The failure taxonomy: every way a step can fail has a stable short name and a short,
specific message that the next prompt receives.

A message is what a debugging model reads first, so it names the one fact that matters
(the final exception and the script line that raised it, the limit that was hit) rather
than pasting a whole stderr: long tails bury the cause and cost prompt tokens on every
retry. ``detail`` keeps the longer material (partial code, a traceback excerpt) for the
caller that wants it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import ProposalFailed
from ..core.vocabulary import FAILURES, FailureKind

MESSAGE_LIMIT = 600
DETAIL_LIMIT = 4000
SCRIPT_NAME = "solution.py"


@dataclass(frozen=True)
class Failure:
    """A named failure. ``kind`` is a stable short name (a ``FailureKind``; a sandbox status such
    as ``disk`` or ``procs`` passes through as its own kind); ``message`` is at most
    ``MESSAGE_LIMIT`` characters and is written for the next prompt; ``detail`` holds the
    longer material behind it (partial code for ``truncated``, a traceback excerpt)."""

    kind: FailureKind
    message: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class CoderFailure(ProposalFailed):
    """Raised by a brain when a reply cannot become a script; carries the named Failure so the
    loop records ``failure.kind`` as the node status instead of a generic brain error."""

    def __init__(self, failure: Failure):
        super().__init__(str(failure))
        self.failure = failure

    def as_record(self) -> tuple[FailureKind, str, str]:
        partial = self.failure.detail if self.failure.kind == FailureKind.TRUNCATED else ""
        return self.failure.kind, self.failure.message, partial


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` stripped and cut to ``limit`` characters, marking the cut with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --- tracebacks -----------------------------------------------------------------------

_TB_HEADER = "Traceback (most recent call last):"
# '  File "/x/solution.py", line 42, in <module>'; a SyntaxError frame has no ", in ...".
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    func: str
    code: str


@dataclass(frozen=True)
class ParsedTraceback:
    """The last traceback in a stderr text: its frames, final exception line(s), raw text."""

    frames: tuple[Frame, ...]
    exception: str
    text: str

    def script_frame(self, script: str = SCRIPT_NAME) -> Frame | None:
        """The innermost frame that belongs to the generated script (where its code went wrong)."""
        for frame in reversed(self.frames):
            if frame.file.replace("\\", "/").rsplit("/", 1)[-1] == script:
                return frame
        return None


def parse_last_traceback(stderr: str) -> ParsedTraceback | None:
    """Parse the last traceback in ``stderr`` (chained exceptions print several; the last one
    ends in the exception that killed the script). Returns None when there is none. A tail cut
    before the ``Traceback`` header still parses if it holds frames."""
    text = stderr.replace("\r\n", "\n")
    start = text.rfind(_TB_HEADER)
    if start < 0:
        first = re.search(r'^\s*File "[^"]+", line \d+', text, re.MULTILINE)
        if first is None:
            return None
        start = first.start()
    lines = text[start:].split("\n")
    frames: list[Frame] = []
    i = 1 if lines[0].startswith(_TB_HEADER) else 0
    while i < len(lines):
        match = _FRAME.match(lines[i])
        if match:
            code = ""
            j = i + 1
            # The source line is indented deeper than the frame line; 3.11+ adds caret lines.
            while j < len(lines) and lines[j].startswith("    ") and not _FRAME.match(lines[j]):
                if not _CARETS.match(lines[j]) and not code:
                    code = lines[j].strip()
                j += 1
            frames.append(Frame(match["file"], int(match["line"]), (match["func"] or "").strip(), code))
            i = j
            continue
        if lines[i].strip() and not lines[i].startswith(" "):
            break  # the first unindented line after the frames is the exception
        i += 1
    exc_lines: list[str] = []
    for line in lines[i:]:
        if not line.strip() or any(line.startswith(c) for c in _CHAIN) or line.startswith(_TB_HEADER):
            break
        exc_lines.append(line.rstrip())
        if len(exc_lines) == 6:
            break
    if not frames and not exc_lines:
        return None
    return ParsedTraceback(tuple(frames), "\n".join(exc_lines).strip(), "\n".join(lines[: i + len(exc_lines)]))


def _library_site(frame: Frame) -> str:
    """'pandas/core/indexes/base.py:3805 get_loc' from a site-packages path (short and telling)."""
    path = frame.file.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker.startswith("/lib"):
                path = path.split("/", 1)[-1]
            break
    return f"{path}:{frame.line} {frame.func}".strip()


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()
    return ""


def describe_crash(stderr: str, fallback: str = "") -> tuple[str, str]:
    """(message, detail) for a script that raised: the final exception, the innermost
    solution.py frame with its code line, and the library frame that raised it, if any."""
    tb = parse_last_traceback(stderr)
    if tb is None:
        last = _last_line(stderr) or _last_line(fallback)
        reason = fallback.strip().splitlines()[0] if fallback.strip() else "the script failed"
        message = f"{reason}; no Python traceback." + (
            f" Last stderr line: {clip(last, 300)}" if last and last != reason else ""
        )
        return clip(message), clip(stderr, DETAIL_LIMIT)
    exception = tb.exception or _last_line(stderr) or "an exception (no message)"
    parts = [clip(exception.splitlines()[0] if len(exception) > 300 else exception.replace("\n", " | "), 320)]
    frame = tb.script_frame()
    if frame is not None:
        where = f"at {SCRIPT_NAME} line {frame.line}"
        if frame.func and frame.func != "<module>":
            where += f" (in {frame.func})"
        if frame.code:
            where += f": {clip(frame.code, 160)}"
        parts.append(where)
    inner = tb.frames[-1] if tb.frames else None
    if inner is not None and inner is not frame and frame is not None:
        parts.append(f"raised inside {clip(_library_site(inner), 120)}")
    return clip(" — ".join(parts)), clip(tb.text, DETAIL_LIMIT)


# --- from a finished node -------------------------------------------------------------

_TIMEOUT_S = re.compile(r"after ([\d.]+) s")
_MEMORY_CAP = re.compile(r"used (\d+) MiB, over the (\d+) MiB cap")
_LINE = re.compile(r"line (\d+)")
_PASS_THROUGH = frozenset(
    {
        FailureKind.GUARD_REJECTED,
        FailureKind.INVALID_OUTPUT,
        FailureKind.BRAIN_ERROR,
        FailureKind.TRUNCATED,
        FailureKind.NO_CODE,
        FailureKind.DIFF_MISMATCH,
    }
)

_TIMEOUT_HINT = (
    "Make it fit: fewer boosting rounds with early stopping, fewer CV folds, subsample rows "
    "while iterating, use all MLGUILD_THREADS cores, avoid per-row Python loops."
)
_MEMORY_HINT = (
    "Use less memory: float32/int32 and category dtypes, read only the needed columns, "
    "smaller batches, sparse instead of dense matrices, no one-hot of high-cardinality "
    "columns, delete intermediate frames."
)


def failure_from_node(status: str, failure_text: str | None, stderr_tail: str = "") -> Failure:
    """Turn a finished node's outcome into a named Failure with a short, specific message.

    ``status`` is the node status (a failure kind or a sandbox status), ``failure_text`` the
    harness's failure string (for a run failure: its one-line reason, then the output tail),
    ``stderr_tail`` the end of the script's stderr. ``crash`` names the last traceback's final
    exception and the innermost solution.py frame; ``timeout`` and ``memory`` name the limit
    and how to stay under it; output and guard failures pass the harness's message through.
    Raises ValueError for a status that is not a failure (``scored``, ``pending``).
    """
    if status not in FAILURES:
        raise ValueError(f"node status {status!r} is not a failure")
    kind = FailureKind(status)
    text = (failure_text or "").strip()
    reason = text.splitlines()[0] if text else ""
    stderr = stderr_tail or ("\n".join(text.splitlines()[1:]) if text else "")

    if status == FailureKind.CRASH:
        message, detail = describe_crash(stderr, fallback=reason)
        return Failure(FailureKind.CRASH, message, detail)
    if status == FailureKind.TIMEOUT:
        limit = _TIMEOUT_S.search(reason)
        what = (
            f"was killed at the {float(limit[1]):g} s wall-clock limit"
            if limit
            else f"ran out of time ({clip(reason, 120) or 'time limit'})"
        )
        last = _last_line(stderr)
        where = f" Last stderr line: {clip(last, 150)}." if last else ""
        return Failure(
            FailureKind.TIMEOUT,
            clip(f"The script {what} before writing its outputs.{where} {_TIMEOUT_HINT}"),
            clip(stderr, DETAIL_LIMIT),
        )
    if status == FailureKind.MEMORY:
        cap = _MEMORY_CAP.search(reason)
        what = (
            f"The process tree reached {cap[1]} MiB, over the {cap[2]} MiB cap, and was killed"
            if cap
            else "The script ran out of memory"
        )
        tb = parse_last_traceback(stderr)
        frame = tb.script_frame() if tb else None
        if frame is not None:
            what += f" at {SCRIPT_NAME} line {frame.line}: {clip(frame.code, 140)}"
        if tb is not None and tb.exception:
            what += f" ({clip(tb.exception.splitlines()[0], 160)})"
        return Failure(FailureKind.MEMORY, clip(f"{what}. {_MEMORY_HINT}"), clip(stderr, DETAIL_LIMIT))
    if status == FailureKind.SYNTAX_ERROR:
        tb = parse_last_traceback(stderr) if stderr else None
        if not text and tb is not None and tb.frames:
            text = f"SyntaxError at line {tb.frames[-1].line}: {tb.exception.split(':', 1)[-1].strip()}"
        line = _LINE.search(text)
        message = text if line else f"{text or 'the script does not compile'} (line unknown)"
        return Failure(FailureKind.SYNTAX_ERROR, clip(message), clip(stderr, DETAIL_LIMIT))
    if status == FailureKind.MISSING_OUTPUT:
        message = (
            text or "the script finished without writing its outputs"
        ) + "; write output/holdout.csv and output/submission.csv relative to the working directory"
        return Failure(FailureKind.MISSING_OUTPUT, clip(message), clip(stderr, DETAIL_LIMIT))
    if status == FailureKind.DISK:
        return Failure(
            FailureKind.DISK,
            clip(
                f"{reason or 'the script wrote too much to disk'}. Do not save models, "
                "caches or intermediate files; write only the two output CSVs."
            ),
            clip(stderr, DETAIL_LIMIT),
        )
    if status == FailureKind.PROCS:
        return Failure(
            FailureKind.PROCS,
            clip(f"{reason or 'too many processes'}. Use n_jobs=MLGUILD_THREADS and do not spawn processes in a loop."),
            clip(stderr, DETAIL_LIMIT),
        )
    if status in _PASS_THROUGH:
        # The harness's (or coder's) message already names the file, reason code and row.
        return Failure(kind, clip(text or status.replace("_", " ")), clip(stderr, DETAIL_LIMIT))
    # sandbox_error, interrupted and kinds added later: the first line is the reason and
    # the rest is an output tail that belongs in detail, not in the prompt.
    return Failure(kind, clip(reason or status.replace("_", " ")), clip(text, DETAIL_LIMIT))
