"""Line matching for SEARCH/REPLACE edits: the tolerance levels, and the closest region of
the code for a SEARCH that matches nothing.

Levels, tried in order; the first level that matches anywhere decides:

1. ``exact``    the lines as written;
2. ``rstrip``   ignoring trailing whitespace on each line;
3. ``indent``   ignoring a uniform indentation offset (models often re-indent a method body):
                the REPLACE lines are shifted by the same offset;
4. ``spaces``   ignoring whitespace between tokens and blank lines between lines, with the
                REPLACE re-indented by the offset of the first line.

There is no similarity matching: text that differs in anything but whitespace is another
statement, and editing the wrong statement is worse than asking again. Similarity is used
only to *show* the model the region it probably meant.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable

Shift = Callable[[str], str]
Match = tuple[int, int, Shift]  # (first line, end line exclusive, indentation shifter)

_CLOSEST_MIN_RATIO = 0.35
_CLOSEST_CANDIDATES = 8
_WORD = re.compile(r"\w+")
_AROUND_PUNCT = re.compile(r" ?([^\w ]) ?")


def _ws(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _shift(code_ws: str, search_ws: str) -> Shift:
    """A function moving a line's indentation from the SEARCH's level to the code's."""
    if code_ws == search_ws:
        return lambda line: line
    if code_ws.endswith(search_ws):
        extra = code_ws[: len(code_ws) - len(search_ws)]
        return lambda line: extra + line if line.strip() else line
    if search_ws.endswith(code_ws):
        cut = search_ws[: len(search_ws) - len(code_ws)]

        def dedent(line: str) -> str:
            if line.startswith(cut):
                return line[len(cut) :]
            return line[min(len(_ws(line)), len(cut)) :]

        return dedent
    delta = len(code_ws.expandtabs(4)) - len(search_ws.expandtabs(4))  # mixed tabs and spaces

    def by_width(line: str) -> str:
        if not line.strip():
            return line
        width = max(0, len(_ws(line).expandtabs(4)) + delta)
        return " " * width + line.lstrip()

    return by_width


def _first_pair(code: list[str], search: list[str]) -> tuple[str, str]:
    c = next((line for line in code if line.strip()), "")
    s = next((line for line in search if line.strip()), "")
    return _ws(c), _ws(s)


def _squash(line: str) -> str:
    # Whitespace between tokens is dropped, but one space between two words stays:
    # "import os" must not equal "importos".
    return _AROUND_PUNCT.sub(r"\1", " ".join(line.split()))


def find_matches(lines: list[str], search: list[str]) -> tuple[str, list[Match]]:
    """(level name, matches as (start, end-exclusive, line shifter)) at the first level that
    matches anywhere; ("", []) when none does."""
    n = len(search)
    same = lambda line: line
    for level, equal in (("exact", lambda a, b: a == b), ("rstrip", lambda a, b: a.rstrip() == b.rstrip())):
        found = [
            (i, i + n, same) for i in range(len(lines) - n + 1) if all(equal(lines[i + k], search[k]) for k in range(n))
        ]
        if found:
            return level, found

    found = []
    for i in range(len(lines) - n + 1):
        window = lines[i : i + n]
        if any(bool(a.strip()) != bool(b.strip()) for a, b in zip(window, search)):
            continue
        if any(a.strip() != b.strip() for a, b in zip(window, search)):
            continue
        shift = _shift(*_first_pair(window, search))
        if all(shift(b).rstrip() == a.rstrip() for a, b in zip(window, search) if a.strip()):
            found.append((i, i + n, shift))
    if found:
        return "indent", found

    wanted = [_squash(line) for line in search if line.strip()]
    if not wanted:
        return "", []
    solid = [i for i, line in enumerate(lines) if line.strip()]
    squashed = [_squash(lines[i]) for i in solid]
    m = len(wanted)
    for k in range(len(solid) - m + 1):
        if squashed[k : k + m] == wanted:
            start, end = solid[k], solid[k + m - 1] + 1
            found.append((start, end, _shift(*_first_pair(lines[start:end], search))))
    return ("spaces", found) if found else ("", [])


def closest_region(lines: list[str], search: list[str]) -> tuple[int | None, int]:
    """The window of the code most similar to the SEARCH text, or (None, 0) when nothing is
    even loosely similar. Windows are ranked by shared identifiers (a sliding count, cheap on
    long scripts), then the best few by character similarity."""
    n = max(1, len(search))
    want = Counter(tok for line in search for tok in _WORD.findall(line))
    if not want or not lines:
        return None, 0
    size_want = sum(want.values())
    tokens = [Counter(_WORD.findall(line)) for line in lines]
    window: Counter = Counter()
    for line in tokens[:n]:
        window.update(line)
    size = sum(window.values())
    ranked: list[tuple[float, int]] = []
    for i in range(max(1, len(lines) - n + 1)):
        if i:
            window.subtract(tokens[i - 1])
            size -= sum(tokens[i - 1].values())
            if i + n - 1 < len(lines):
                window.update(tokens[i + n - 1])
                size += sum(tokens[i + n - 1].values())
        shared = sum(min(count, window[tok]) for tok, count in want.items())
        ranked.append((2 * shared / (size_want + size or 1), i))
    ranked.sort(key=lambda item: (-item[0], item[1]))  # ties: the earliest place
    target = "\n".join(line.strip() for line in search if line.strip())
    best, where = _CLOSEST_MIN_RATIO, None
    for _, i in ranked[:_CLOSEST_CANDIDATES]:
        text = "\n".join(line.strip() for line in lines[i : i + n] if line.strip())
        ratio = difflib.SequenceMatcher(None, target, text, autojunk=False).ratio()
        if ratio > best:
            best, where = ratio, i
    return (where, min(len(lines), where + n)) if where is not None else (None, 0)
