"""Score: a metric value that knows its direction, and the Worst score that always loses."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Direction = Literal["maximize", "minimize"]

# How a prompt names a pooled score: on a small holdout the search ranks a node by its holdout
# and out-of-fold scores weighted by their rows (mlguild.scoring.oof), which is not a holdout score.
POOLED_LABEL = "pooled holdout+OOF"


@dataclass(frozen=True)
class Score:
    """A metric value that knows its direction. ``value=None`` is the Worst score.

    NaN and infinite values are stored as ``None``: a broken computation must never win
    a comparison, and NaN compares False with everything, which would otherwise let it
    slip through ``max()``.
    """

    value: float | None
    direction: Direction

    def __post_init__(self) -> None:
        if self.direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {self.direction!r}")
        v = self.value
        if v is not None:
            v = float(v)
            object.__setattr__(self, "value", v if math.isfinite(v) else None)

    @classmethod
    def worst(cls, direction: Direction) -> Score:
        """A score that loses to every real score of the same direction."""
        return cls(None, direction)

    @property
    def is_worst(self) -> bool:
        return self.value is None

    def key(self) -> float:
        """A sort key where bigger is better; ``-inf`` for the worst score."""
        if self.value is None:
            return -math.inf
        return self.value if self.direction == "maximize" else -self.value

    def _check(self, other: Score) -> None:
        if not isinstance(other, Score):
            raise TypeError(f"cannot compare Score with {type(other).__name__}")
        if other.direction != self.direction:
            raise ValueError(f"cannot compare a {self.direction} score with a {other.direction} score")

    def better_than(self, other: Score) -> bool:
        """Strictly better. Worst is never better than anything, not even another Worst."""
        self._check(other)
        return self.key() > other.key()

    def __lt__(self, other: Score) -> bool:
        # "less" means "worse", so max(scores) is the best and sorted() goes worst-first.
        self._check(other)
        return self.key() < other.key()

    def __str__(self) -> str:
        if self.value is None:
            return "worst"
        v = self.value
        return f"{v:.4f}" if v == 0 or 1e-3 <= abs(v) < 1e9 else f"{v:.4e}"


SIGNIFICANT = 5  # digits a score is shown with: a holdout cannot tell apart the sixth


def format_score(value: float | None) -> str:
    """A score as every view prints it (the CLI, the live board, the report): 5 significant
    digits, trailing zeros kept so that a column of scores lines up (``1.0000``, ``0.99897``),
    a large value whole (``123457``); ``—`` for none."""
    if value is None or not math.isfinite(value):
        return "—"
    if 1e5 <= abs(value) < 1e15:
        return f"{value:.0f}"
    return f"{value:#.{SIGNIFICANT}g}".rstrip(".")
