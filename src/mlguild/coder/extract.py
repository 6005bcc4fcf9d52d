"""Extracting a script from a model's reply, and naming what went wrong when there is none.

Rules, in order:
- Reasoning sections (``<think>…</think>``) are dropped first: reasoning models draft code
  there that is not the answer.
- Fenced blocks are Python when labelled ``python``/``py`` (or a generic label such as
  ``text``) or, unlabelled, when their content looks like Python. Of several, the largest is
  taken: replies pair the script with short snippets (``pip install``, a usage line, a one-line
  tweak) and the full script is always the longest block.
- A reply with no fence is accepted when it is bare code: the whole text compiles, or the text
  from its first code-like line on does (prose before it becomes the plan).
- Truncation is its own failure, carrying the partial code, so the caller asks the model to
  continue instead of re-deriving the script from a meaningless SyntaxError:
  an opening fence with no closing fence (unless the provider said the model stopped on its own
  *and* the code compiles: some providers use the closing fence as a stop sequence and strip it),
  or a closed block or bare code that does not compile when the reply hit the length limit.
- A closed block that does not compile without a length stop is returned as code: that is a
  syntax error, which the guard names with its line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..core.vocabulary import FailureKind
from ..util import pysource
from .failures import Failure, clip

_LENGTH_STOPS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length", "max_tokens_reached"})
_NORMAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence", "eos", "eos_token", "complete"})
PY_LANGS = frozenset({"python", "py", "python3", "py3"})
GENERIC_LANGS = frozenset({"", "text", "txt", "plaintext", "code"})

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
_CODE_START = re.compile(
    r"^(?:import [\w.]+|from [\w.]+ import |def \w+\s*\(|async def |class \w+|if __name__|@\w|#!|\"\"\"|''')"
)
_EDIT_MARKER = re.compile(r"^\s*<{5,9} ?SEARCH\s*$", re.MULTILINE)


def _reason(finish_reason: str | None) -> str:
    # "FinishReason.MAX_TOKENS" (a stringified Gemini enum) reads as "max_tokens".
    return (finish_reason or "").strip().lower().rsplit(".", 1)[-1]


def is_length_stop(finish_reason: str | None) -> bool:
    """True when the provider says the reply stopped at the output-token limit."""
    return _reason(finish_reason) in _LENGTH_STOPS


def is_normal_stop(finish_reason: str | None) -> bool:
    """True when the provider says the model ended the reply on its own ("unknown" is not)."""
    return _reason(finish_reason) in _NORMAL_STOPS


@dataclass(frozen=True)
class Extraction:
    """What a reply yields. Exactly one of ``code`` and ``failure`` is set. ``plan`` is the
    prose outside the code, trimmed (for plan.md). For ``truncated`` the partial code is
    ``failure.detail`` (also ``partial``)."""

    code: str | None
    failure: Failure | None
    plan: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None and self.code is not None

    @property
    def partial(self) -> str | None:
        """The code written before the cut, when the reply was truncated."""
        return self.failure.detail if self.failure and self.failure.kind == FailureKind.TRUNCATED else None


@dataclass(frozen=True)
class Block:
    """One fenced block: its language label (lower-case first word), content, and whether its
    closing fence was found. ``start``/``end`` are the line indices of the fences."""

    lang: str
    code: str
    closed: bool
    start: int
    end: int


def normalize_reply(reply: str) -> str:
    """LF line endings, reasoning sections removed (an unclosed one runs to the end)."""
    text = reply.replace("\r\n", "\n").replace("\r", "\n")
    text = _THINK.sub("", text)
    match = _THINK_OPEN.search(text)
    return text[: match.start()] if match else text


def parse_fences(text: str) -> list[Block]:
    """The fenced blocks of ``text`` (LF endings), CommonMark-style: a closing fence uses the
    opening character, is at least as long, and has no info string. A fence indented inside a
    list has that indentation removed from its content lines."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent = match["fence"], match["indent"]
        lang = _lang(match["info"])
        closer = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closer.match(lines[j]):
            j += 1
        body = [line[len(indent) :] if indent and line.startswith(indent) else line for line in lines[i + 1 : j]]
        blocks.append(Block(lang, "\n".join(body), j < len(lines), i, min(j, len(lines) - 1)))
        i = j + 1
    return blocks


def _lang(info: str) -> str:
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    return word.strip("{}.").lower()


def compiles(code: str) -> bool:
    """True when ``code`` compiles as a Python module."""
    try:
        pysource.compile_module(code, "<reply>")
    except (SyntaxError, ValueError):
        return False
    return True


def _does_something(code: str) -> bool:
    """True when the module has a statement beyond a bare literal or name: prose like "Done"
    and a JSON object compile, yet are not scripts."""
    try:
        body = pysource.parse(code).body
    except (SyntaxError, ValueError):
        return False
    return any(not isinstance(stmt, ast.Expr) or isinstance(stmt.value, ast.Call) for stmt in body)


def looks_like_python(code: str) -> bool:
    """Compiles into something that does work, or (for a cut-off block) has a top-level
    Python line such as an import, a def or a class."""
    if compiles(code):
        return _does_something(code)
    return any(_CODE_START.match(line) for line in code.split("\n"))


def _finish(code: str) -> str:
    return code.strip("\n") + "\n"


def _plan(text: str, drop: tuple[int, int] | None) -> str:
    lines = text.split("\n")
    if drop is not None:
        lines = lines[: drop[0]] + [""] + lines[drop[1] + 1 :]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def truncated(partial: str, plan: str = "") -> Extraction:
    """The ``truncated`` Extraction for ``partial`` code cut off by the output limit."""
    partial = partial.rstrip(" \t")
    lines = partial.rstrip("\n").split("\n") if partial.strip() else []
    if not lines:
        message = (
            "The reply was cut off by the output limit before any code. "
            "Write the complete script, with a shorter explanation."
        )
    else:
        stop = clip(lines[-1].strip(), 100) or "a blank line"
        message = (
            f"The reply was cut off by the output limit after {len(lines)} lines of the script "
            f"(it stops at: {stop}). Continue from exactly that point; do not start over."
        )
    return Extraction(None, Failure(FailureKind.TRUNCATED, message, partial), plan)


def no_code(message: str, plan: str = "") -> Extraction:
    return Extraction(None, Failure(FailureKind.NO_CODE, message), plan)


def verdict(code: str, closed: bool, finish_reason: str | None, plan: str = "") -> Extraction:
    """The shared truncation rule for a candidate script (see the module docstring)."""
    if not closed and not (is_normal_stop(finish_reason) and compiles(code)):
        return truncated(code, plan)
    if closed and is_length_stop(finish_reason) and not compiles(code):
        return truncated(code, plan)
    if _EDIT_MARKER.search(code):
        return no_code(
            "The reply contains SEARCH/REPLACE edit blocks where a complete script was asked for. "
            "Reply with the whole script in a single ```python block.",
            plan,
        )
    return Extraction(_finish(code), None, plan)


def extract_code(reply: str, finish_reason: str | None = None) -> Extraction:
    """Extract the script from a model reply (rules in the module docstring).

    ``finish_reason`` is the provider's stop reason (``length``/``max_tokens``/``MAX_TOKENS``
    mean the output limit; ``stop``/``end_turn`` mean the model stopped itself; None: unknown).
    Returns code with a trailing newline, or a Failure named ``truncated`` (partial code in
    ``detail``) or ``no_code``. Never raises on any string.
    """
    text = normalize_reply(reply)
    cut = is_length_stop(finish_reason)
    blocks = parse_fences(text)
    python = [b for b in blocks if b.lang in PY_LANGS or (b.lang in GENERIC_LANGS and looks_like_python(b.code))]
    if python:
        chosen = max(python, key=lambda b: len(b.code.strip()))  # first of equals: max() keeps it
        plan = _plan(text, (chosen.start, chosen.end))
        return verdict(chosen.code, chosen.closed, finish_reason, plan)
    if blocks:
        if cut and not blocks[-1].closed:
            return truncated("", _plan(text, None))
        langs = ", ".join(sorted({b.lang or "unlabelled" for b in blocks}))
        return no_code(
            f"The reply's code blocks ({langs}) hold no Python script. "
            "Write the complete script in a single ```python block.",
            _plan(text, None),
        )
    return _bare(text, finish_reason)


def _bare(text: str, finish_reason: str | None) -> Extraction:
    """A reply without fences: bare code, bare code after some prose, or prose only."""
    cut = is_length_stop(finish_reason)
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
    whole = bool(text.strip()) and compiles(text) and _does_something(text)
    if cut and (whole or start is not None):
        # Without a closing fence nothing proves bare code complete: a cut at a line
        # boundary compiles yet lacks the end of the script.
        return truncated(
            text.strip("\n") if whole or start is None else "\n".join(lines[start:]),
            "" if whole else "\n".join(lines[:start]).strip(),
        )
    if whole:
        return Extraction(_finish(text), None, "")
    if start is None:
        if cut:
            return no_code(
                "The reply reached the output limit before any code. Keep the explanation to a few "
                "sentences and write the complete script in a single ```python block.",
                text.strip(),
            )
        return no_code(
            "The reply contains no Python code. Reply with the complete script in a single ```python block.",
            text.strip(),
        )
    before = "\n".join(lines[:start]).strip()
    # Prose after the code is short: try dropping up to 30 trailing lines until the code compiles.
    end = len(lines)
    while end > start and not lines[end - 1].strip():
        end -= 1
    for stop in range(end, max(start, end - 30), -1):
        if not lines[stop - 1].strip():
            continue
        body = "\n".join(lines[start:stop])
        if compiles(body) and _does_something(body):
            after = "\n".join(lines[stop:]).strip()
            return Extraction(_finish(body), None, "\n\n".join(p for p in (before, after) if p))
    body = "\n".join(lines[start:])
    if sum(1 for line in lines[start:] if _CODE_START.match(line)) >= 2:
        return Extraction(_finish(body), None, before)  # bare code with a syntax error: the guard names it
    return no_code(
        "The reply contains no complete Python script. Reply with the complete script in a single ```python block.",
        text.strip(),
    )
