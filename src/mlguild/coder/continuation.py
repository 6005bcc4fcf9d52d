"""Continuing a truncated script: the prompt that asks for the rest, and the join.

Models asked to continue rarely do it cleanly: they repeat the last line or few, re-open a
```python fence, open with "Continuing from where I left off:", or restart the script from
the top. The join undoes each of these, so a continued script neither loses nor duplicates
a line. The loop (ask, join, ask again while still truncated) is the caller's; it should stop
after ``MAX_CONTINUATIONS`` rounds, since a model that keeps running out of room needs a
shorter script, not more rounds.
"""

from __future__ import annotations

import re

from ..prompts import render
from .extract import (
    GENERIC_LANGS,
    PY_LANGS,
    Extraction,
    compiles,
    looks_like_python,
    normalize_reply,
    parse_fences,
    truncated,
    verdict,
)

MAX_CONTINUATIONS = 3
TAIL_LINES = 40
_MAX_OVERLAP = 60

# Lines a continuation opens with that are not code: "Continuing from where I left off:".
_CHATTER = re.compile(
    r"^(?:sure|certainly|ok(?:ay)?|here|continuing|continued|continuation|resuming|"
    r"picking up|below|the rest)\b[^=()\[\]]*[:.!]?\s*$",
    re.IGNORECASE,
)
# A sentence: "I'll pick up at the training loop." (code starting with a capitalised word has
# no space after it, or an "=").
_SENTENCE = re.compile(r"^[A-Z][A-Za-z']*\s+[A-Za-z`][^=]*$")
# Placeholder lines standing for the part already written: "...", "# ... previous code ...".
_PLACEHOLDER = re.compile(
    r"^\s*(?:\.\.\.|…)\s*$|^\s*#\s*(?:\.\.\.|…|\(?continu|rest of|previous code|same as)", re.IGNORECASE
)


def continue_prompt(partial: str, tail_lines: int = TAIL_LINES) -> str:
    """The instruction to continue a truncated script exactly where it stopped, showing its last
    ``tail_lines`` lines. When the cut fell mid-line, the model is asked to rewrite that line
    whole (a fragment is easy to mis-join; a repeated whole line is easy to remove)."""
    if not partial.strip():
        return render("continue", tail="", fragment=False)
    lines = partial.replace("\r\n", "\n").rstrip(" \t").split("\n")
    fragment = not partial.endswith("\n")
    if not fragment:
        lines = lines[:-1]
    return render("continue", tail="\n".join(lines[-tail_lines:]), fragment=fragment)


def join_continuation(partial: str, reply: str, finish_reason: str | None = None) -> Extraction:
    """Join ``partial`` (the code of a ``truncated`` Extraction) with the model's continuation.

    Removes chatter lines, a re-opened fence, stand-in lines ("# ... previous code ...") and
    lines repeated from the end of ``partial``; a continuation that restarts the script from its first lines replaces it.
    The result follows the same truncation rule as ``extract_code``: still truncated (the block
    never closed, or a length stop with code that does not compile) gives a ``truncated``
    Extraction holding the joined partial, ready for another round. ``plan`` is the prose of
    this reply only; the caller keeps the plan of the first reply.
    """
    text = normalize_reply(reply)
    cont, closed, plan = _continuation_text(text)
    partial = partial.replace("\r\n", "\n")
    joined = _join(partial, cont)
    if joined.rstrip() == partial.rstrip() and not (closed and compiles(joined)):
        # Nothing was added (a refusal, a stand-in line): the script is as cut off as before.
        return truncated(partial, plan)
    return verdict(joined, closed, finish_reason, plan)


def _continuation_text(text: str) -> tuple[str, bool, str]:
    """(code, whether its block closed, the prose around it)."""
    lines = text.split("\n")
    blocks = parse_fences(text)
    if blocks:
        first = blocks[0]
        before = [line for line in lines[: first.start] if line.strip() and not _is_prose(line)]
        if first.lang == "" and (before or (not first.closed and not looks_like_python(first.code))):
            # Raw code (or nothing) first, then a bare fence with no code after it: the model
            # went on inside the original block and closed it. That fence is a closer.
            body = lines[: first.start]
            prose = "\n".join(lines[first.start + 1 :]).strip()
            return _strip_chatter(body), True, prose
        chosen = max(blocks, key=lambda b: (b.lang in PY_LANGS or b.lang in GENERIC_LANGS, len(b.code)))
        prose = "\n".join(lines[: chosen.start] + lines[chosen.end + 1 :]).strip()
        return chosen.code, chosen.closed, prose
    return _strip_chatter(lines), False, ""


def _is_prose(line: str) -> bool:
    return bool(_CHATTER.match(line) or _SENTENCE.match(line))


def _strip_chatter(lines: list[str]) -> str:
    i = 0
    while i < len(lines) and (not lines[i].strip() or _is_prose(lines[i])):
        i += 1
    return "\n".join(lines[i:])


def _same(a: list[str], b: list[str]) -> bool:
    return len(a) == len(b) and all(x.rstrip() == y.rstrip() for x, y in zip(a, b))


def _substantive(lines: list[str]) -> bool:
    # A repeated ")" or "else:" proves nothing; a repeated real line proves an overlap.
    return any(len(line.strip()) >= 6 for line in lines)


def _first_code(lines: list[str], n: int = 3) -> list[str]:
    return [line.rstrip() for line in lines if line.strip()][:n]


def _join(partial: str, cont: str) -> str:
    c = cont.split("\n")
    while c and (not c[0].strip() or _PLACEHOLDER.match(c[0])):
        c.pop(0)
    while c and not c[-1].strip():
        c.pop()
    if not c:
        return partial
    p_all = partial.split("\n")
    head_start = _first_code(p_all)
    if len(head_start) == 3 and _first_code(c) == head_start:
        return "\n".join(c) + "\n"  # the model restarted from the top: its version replaces ours

    fragment = "" if partial.endswith("\n") else p_all[-1]
    head = p_all[:-1]  # complete lines (the last element is "" or the fragment)
    trimmed = list(head)
    while trimmed and not trimmed[-1].strip():
        trimmed.pop()  # trailing blank lines are not repeated by models

    overlap: list[str] | None = None
    repeated: list[str] = []
    if fragment.strip():
        stem = fragment.rstrip()
        for k in range(min(len(c), len(trimmed) + 1, _MAX_OVERLAP), 0, -1):
            if c[k - 1].startswith(stem) and _same(trimmed[len(trimmed) - (k - 1) :] if k > 1 else [], c[: k - 1]):
                overlap, repeated = trimmed + c[k - 1 :], c[:k]
                break
        plain = head + [fragment + c[0]] + c[1:]
    else:
        for k in range(min(len(c), len(trimmed), _MAX_OVERLAP), 0, -1):
            if _same(trimmed[-k:], c[:k]):
                overlap, repeated = trimmed + c[k:], c[:k]
                break
        plain = head + c

    choice = plain
    if overlap is not None:
        take_overlap = _substantive(repeated)
        text_o, text_p = "\n".join(overlap), "\n".join(plain)
        if take_overlap and not compiles(text_o) and compiles(text_p):
            take_overlap = False
        elif not take_overlap and compiles(text_o) and not compiles(text_p):
            take_overlap = True
        choice = overlap if take_overlap else plain
    return "\n".join(choice)
