"""Did-you-mean: the known name a user probably meant, and a short list of the names there are."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The choice ``word`` most likely meant: the same name in other case first (``Diagnosis`` for
    ``diagnosis``), then the closest spelling; None when nothing is close."""
    folded = [c for c in choices if c.casefold() == word.casefold()]
    if folded:
        return folded[0]
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if near:
        return near[0]
    near = difflib.get_close_matches(word.casefold(), [c.casefold() for c in choices], n=1, cutoff=0.6)
    return next((c for c in choices if c.casefold() == near[0]), None) if near else None


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """'; did you mean 'x'?' when a choice is close, else ''."""
    guess = closest(word, choices)
    return f"; did you mean {guess!r}?" if guess is not None else ""


def listing(choices: Sequence[str], limit: int = 12) -> str:
    """The first ``limit`` names, then how many more: a long list never looks complete when it is not."""
    shown = ", ".join(choices[:limit])
    return shown if len(choices) <= limit else f"{shown}, … ({len(choices) - limit} more)"
