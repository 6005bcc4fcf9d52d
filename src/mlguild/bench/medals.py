"""Kaggle medals from a competition's leaderboard, as MLE-bench computes them.

The leaderboard is the final private leaderboard: one score per team, in rank order. The
medal positions depend on how many teams there are (Kaggle's progression table); a score wins
a medal when it is at least as good as the score at that position (a tie with the threshold
counts). "Above median" is strict. The win rate, CoMind's headline figure, is the share of
the leaderboard's teams a score beats (strictly: a tie beats no one). Whether lower is better is read off the leaderboard itself
(its first score below its last), as MLE-bench does; a flat leaderboard falls back to the
metric's own direction.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import TaskError


def medal_positions(n_teams: int) -> tuple[int, int, int]:
    """1-based leaderboard positions of the (gold, silver, bronze) thresholds for ``n_teams``."""
    if n_teams < 1:
        raise ValueError("a leaderboard needs at least one team")
    if n_teams < 100:
        return max(1, math.floor(0.1 * n_teams)), max(1, math.floor(0.2 * n_teams)), max(1, math.floor(0.4 * n_teams))
    if n_teams < 250:
        return 10, math.floor(0.2 * n_teams), math.floor(0.4 * n_teams)
    if n_teams < 1000:
        return 10 + math.floor(0.002 * n_teams), 50, 100
    return 10 + math.floor(0.002 * n_teams), math.floor(0.05 * n_teams), math.floor(0.1 * n_teams)


@dataclass(frozen=True)
class Leaderboard:
    scores: tuple[float, ...]  # in rank order, best first
    lower_is_better: bool

    @classmethod
    def read(cls, path: Path, metric_direction: str | None = None) -> Leaderboard:
        """A leaderboard CSV with a ``score`` column, rows in rank order."""
        try:
            frame = pd.read_csv(path)
        except (OSError, ValueError) as exc:
            raise TaskError(f"cannot read the leaderboard {path}: {exc}", "give a CSV with a 'score' column") from None
        if "score" not in frame.columns:
            raise TaskError(
                f"the leaderboard {path} has no 'score' column (it has {list(frame.columns)[:8]})",
                "give MLE-bench's leaderboard.csv of the competition",
            )
        scores = pd.to_numeric(frame["score"], errors="coerce").dropna()
        if scores.empty:
            raise TaskError(f"the leaderboard {path} has no numeric scores", "check the file")
        return cls.of([float(s) for s in scores], metric_direction)

    @classmethod
    def of(cls, scores: list[float], metric_direction: str | None = None) -> Leaderboard:
        first, last = scores[0], scores[-1]
        lower = first < last if first != last else metric_direction == "minimize"
        return cls(tuple(scores), lower)

    def at(self, position: int) -> float:
        return self.scores[position - 1]

    def median(self) -> float:
        return float(pd.Series(self.scores).median())

    def at_least_as_good(self, score: float, threshold: float) -> bool:
        return score <= threshold if self.lower_is_better else score >= threshold

    def win_rate(self, score: float | None) -> float:
        """The share of teams whose score ``score`` strictly beats (0 for no valid submission)."""
        if score is None:
            return 0.0
        beaten = sum((score < s) if self.lower_is_better else (score > s) for s in self.scores)
        return beaten / len(self.scores)


@dataclass(frozen=True)
class MedalReport:
    score: float | None
    gold_threshold: float
    silver_threshold: float
    bronze_threshold: float
    median_threshold: float
    gold_medal: bool
    silver_medal: bool
    bronze_medal: bool
    any_medal: bool
    above_median: bool
    n_teams: int
    lower_is_better: bool
    win_rate: float  # the share of teams beaten, 0..1

    @property
    def medal(self) -> str:
        return "gold" if self.gold_medal else "silver" if self.silver_medal else "bronze" if self.bronze_medal else ""

    def to_dict(self) -> dict:
        return {**asdict(self), "medal": self.medal}


def medal_report(score: float | None, board: Leaderboard) -> MedalReport:
    """The medal a score earns on ``board``; None (no valid submission) earns nothing."""
    gold_at, silver_at, bronze_at = medal_positions(len(board.scores))
    thresholds = board.at(gold_at), board.at(silver_at), board.at(bronze_at)
    median = board.median()
    gold = silver = bronze = above = False
    if score is not None:
        gold = board.at_least_as_good(score, thresholds[0])
        silver = not gold and board.at_least_as_good(score, thresholds[1])
        bronze = not (gold or silver) and board.at_least_as_good(score, thresholds[2])
        above = score < median if board.lower_is_better else score > median
    return MedalReport(
        score, *thresholds, median, gold, silver, bronze, gold or silver or bronze, above, len(board.scores),
        board.lower_is_better, board.win_rate(score),
    )  # fmt: skip
