"""SEARCH/REPLACE edits (the aider / MLEvolve diff format), applied tolerantly but never loosely.

    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE

Blocks are found inside or outside ``` fences, with CRLF or LF endings, with or without a
final newline. Blocks apply in order, each to the code the previous ones produced, and match
whole lines only (a substring match could land inside a longer statement), with the
tolerance levels of ``mlguild.coder.match`` (exact, trailing whitespace, a uniform indentation
offset, whitespace between tokens) and never by similarity. An empty SEARCH
appends the REPLACE lines at the end of the code (aider's "new file" convention, read as
"add this").

Ambiguity: a SEARCH matching several places at its level is a failure (the model is asked for
more context), except when the reply holds as many blocks with that same SEARCH text as there
are matches: then the model meant one block per occurrence, and they apply in document order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.vocabulary import FailureKind
from ..prompts import render
from .failures import Failure, clip
from .match import Match, closest_region, find_matches

MAX_DIFF_REPROMPTS = 2
_CLOSEST_MAX_LINES = 12

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")


@dataclass(frozen=True)
class Edit:
    """One SEARCH/REPLACE block: ``index`` counts from 1 in reply order. ``complete`` is False
    for a block cut off before its ``>>>>>>> REPLACE`` line (a truncated reply); it is never
    applied."""

    search: str
    replace: str
    index: int
    complete: bool = True

    @property
    def first_line(self) -> str:
        """The first non-blank SEARCH line (how a failure names the block to the model)."""
        return next((line.strip() for line in self.search.split("\n") if line.strip()), "")


@dataclass(frozen=True)
class EditFailure:
    """A block that did not apply. ``reason`` is ``no_match``, ``ambiguous`` or ``incomplete``;
    ``closest`` holds a few lines of the current code (no line numbers, so a model can copy
    them into a corrected SEARCH), ``where`` the 1-based line range they came from."""

    index: int
    first_line: str
    reason: str
    message: str
    closest: str = ""
    where: str = ""

    def __str__(self) -> str:
        return self.message


@dataclass
class EditResult:
    """The code after every block that applied, how many applied and how each matched
    (``match_kinds``: exact, rstrip, indent, spaces, append), and the blocks that failed.
    ``total`` is the number of blocks given. Code uses LF endings and ends with a newline."""

    code: str
    applied: int
    failures: list[EditFailure] = field(default_factory=list)
    total: int = 0
    match_kinds: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures and self.applied > 0

    def failure(self) -> Failure | None:
        """The ``diff_mismatch`` Failure for this result (None when every block applied);
        ``detail`` is the retry prompt."""
        if not self.failures:
            return None
        names = "; ".join(
            f"block {f.index} ({f.reason.replace('_', ' ')}): {clip(f.first_line, 60)}" for f in self.failures
        )
        message = f"{len(self.failures)} of {self.total} SEARCH/REPLACE blocks did not apply: {names}"
        return Failure(FailureKind.DIFF_MISMATCH, clip(message), diff_retry_prompt(self.failures, self.code))


# --- parsing ---------------------------------------------------------------------------


def parse_edits(reply: str) -> list[Edit]:
    """The SEARCH/REPLACE blocks of a reply, in order. Fences, file names and prose around
    blocks are ignored. A block whose REPLACE marker never comes (the reply was cut, or a new
    SEARCH began first) is returned with ``complete=False`` so it is reported, not lost."""
    lines = reply.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    edits: list[Edit] = []
    state = "out"
    search: list[str] = []
    replace: list[str] = []

    def close(complete: bool) -> None:
        edits.append(Edit(_text(search), _text(replace), len(edits) + 1, complete))

    for line in lines:
        if state == "out":
            if _SEARCH.match(line):
                state, search, replace = "search", [], []
        elif state == "search":
            if _DIVIDER.match(line):
                state = "replace"
            elif _SEARCH.match(line):
                close(False)
                search, replace = [], []
            else:
                search.append(line)
        else:
            if _REPLACE.match(line):
                close(True)
                state = "out"
            elif _SEARCH.match(line):
                close(False)
                state, search, replace = "search", [], []
            else:
                replace.append(line)
    if state != "out":
        close(False)
    return edits


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


# --- applying --------------------------------------------------------------------------


def _normal(search: str) -> str:
    return "\n".join(line.rstrip() for line in search.strip("\n").split("\n"))


def apply_edits(code: str, edits: Sequence[Edit]) -> EditResult:
    """Apply ``edits`` in order to ``code`` (rules in the module docstring). Blocks that fail
    are reported and skipped; the others still apply. A caller should not run the code until
    ``failures`` is empty: later blocks may rely on a failed one."""
    lines = code.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    result = EditResult(code="", applied=0, total=len(edits))
    for pos, edit in enumerate(edits):
        if not edit.complete:
            result.failures.append(
                EditFailure(
                    edit.index,
                    edit.first_line,
                    "incomplete",
                    f"Block {edit.index} (SEARCH starts `{clip(edit.first_line, 80)}`) is incomplete: "
                    "the reply ended before its >>>>>>> REPLACE line.",
                )
            )
            continue
        search = edit.search.split("\n")[:-1] if edit.search else []
        replace = edit.replace.split("\n")[:-1] if edit.replace else []
        if not any(line.strip() for line in search):
            if lines and lines[-1].strip() and replace:
                lines.append("")
            lines.extend(replace)
            result.applied += 1
            result.match_kinds.append("append")
            continue
        level, found = find_matches(lines, search)
        if len(found) > 1:
            twins = sum(1 for e in edits[pos:] if e.complete and _normal(e.search) == _normal(edit.search))
            if twins != len(found):
                result.failures.append(_ambiguous(edit, found))
                continue
        if not found:
            result.failures.append(_no_match(edit, lines, search))
            continue
        start, end, shift = found[0]
        lines[start:end] = [shift(line) for line in replace]
        result.applied += 1
        result.match_kinds.append(level)
    result.code = "\n".join(lines) + "\n"
    return result


def _ambiguous(edit: Edit, found: list[Match]) -> EditFailure:
    starts = ", ".join(str(start + 1) for start, _, _ in found[:6])
    return EditFailure(
        edit.index,
        edit.first_line,
        "ambiguous",
        f"Block {edit.index} (SEARCH starts `{clip(edit.first_line, 80)}`) is ambiguous: its SEARCH text "
        f"matches {len(found)} places (lines {starts}). Add surrounding lines so it matches exactly one.",
        where=starts,
    )


def _no_match(edit: Edit, lines: list[str], search: list[str]) -> EditFailure:
    start, end = closest_region(lines, search)
    message = (
        f"Block {edit.index} (SEARCH starts `{clip(edit.first_line, 80)}`) matches nothing: "
        "its SEARCH text is not in the current code."
    )
    if start is None:
        return EditFailure(edit.index, edit.first_line, "no_match", message + " No similar region was found.")
    lo, hi = max(0, start - 1), min(len(lines), end + 1)
    hi = min(hi, lo + _CLOSEST_MAX_LINES)
    return EditFailure(edit.index, edit.first_line, "no_match", message, "\n".join(lines[lo:hi]), f"{lo + 1}-{hi}")


# --- re-prompting ----------------------------------------------------------------------


def diff_retry_prompt(failures: Sequence[EditFailure], code: str) -> str:
    """The re-prompt naming each failed block, why it failed, and (for a block that matched
    nothing) the closest region of the current code. The caller shows the current code
    (``EditResult.code``) as ``code``, since applied blocks changed it."""
    parts = []
    for failure in failures:
        part = failure.message
        if failure.closest:
            part += (
                f"\nThe closest region of the current code (lines {failure.where}):\n```python\n{failure.closest}\n```"
            )
        parts.append(part)
    return render("diff_retry", count=len(failures), blocks="\n\n".join(parts), code=code.rstrip())


def should_fallback_to_rewrite(attempts: int, failures: Sequence[EditFailure], blocks: int | None = None) -> bool:
    """Whether to stop re-prompting for edits and ask for the complete script instead.

    ``attempts`` counts the diff replies for this step that have failed to apply, the current
    one included; ``blocks`` is how many blocks the current reply held (``EditResult.total``).
    True after ``MAX_DIFF_REPROMPTS`` failed re-prompts, or when most of two or more blocks
    failed (the model is working from a wrong picture of the code, and another diff built on
    that picture fails too). False when nothing failed.
    """
    if not failures:
        return False
    if attempts > MAX_DIFF_REPROMPTS:
        return True
    return blocks is not None and blocks >= 2 and 2 * len(failures) > blocks
