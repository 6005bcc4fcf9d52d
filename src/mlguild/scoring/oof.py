"""Out-of-fold predictions scored by the harness, and the check that a validation is honest.

A script's ``output/oof.csv`` predicts the training rows with models that did not train on
them. The harness scores it on the training labels (which scripts can read too: it is a
measured number, never one that ranks a node) and sets it beside the holdout score. An
out-of-fold score far better than the holdout's, beyond the noise of both, means the
validation leaked (a target-derived feature, a preprocessor fitted across folds, groups or
near-duplicates split between folds): such a node is flagged ``leaky_cv``, and its
out-of-fold predictions, which would mislead a blend's weights, are kept out of every blend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import SubmissionError
from ..core.score import Direction
from ..task.spec import TaskSpec
from ..util.exact_csv import read_csv_exact
from .scorer import Scorer


@dataclass(frozen=True)
class OofResult:
    score: float
    rows: int
    spread: float | None = None  # the bootstrap spread of the score over the rows, when asked for


class OofScorer:
    """Scores a run's out-of-fold files on the training labels (read once, on first use)."""

    def __init__(self, spec: TaskSpec, train_path: Path):
        self.spec, self.train_path = spec, train_path
        self._labels: pd.DataFrame | None = None

    def _train_labels(self) -> pd.DataFrame:
        if self._labels is None:
            columns = [self.spec.id_column, *self.spec.target_columns]
            train = read_csv_exact(self.train_path)[columns]
            self._labels = train.drop_duplicates(self.spec.id_column).set_index(self.spec.id_column)
        return self._labels

    def score(self, path: Path, spread: bool = False) -> OofResult | None:
        """The out-of-fold file's score and rows (and, with ``spread``, its bootstrap spread), or
        None where it cannot be scored row by row against training labels (repeated ids,
        unknown ids, values the metric cannot take)."""
        if not self.spec.ids_unique:
            return None
        try:
            ids = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=[self.spec.id_column])
            labels = self._train_labels()
            answers = labels.loc[ids[self.spec.id_column]].reset_index()
            known = {v for c in self.spec.target_columns for v in labels[c].unique().tolist()}
            scorer = Scorer(self.spec, answers=answers, max_bytes=None, labels=known)
            value = scorer.score(path).value
            if value is None:  # not a finite number (Score keeps none)
                return None
            return OofResult(value, len(answers), scorer.spread(path) if spread else None)
        except (SubmissionError, ValueError, KeyError, OSError):
            return None


def leaky_cv(
    holdout: float, holdout_spread: float | None, holdout_rows: int, oof: OofResult, direction: Direction, z: float
) -> bool:
    """True when the out-of-fold score beats the holdout score by more than ``z`` standard
    errors of their difference: the holdout's bootstrap noise, and the out-of-fold score's,
    scaled from it by the rows each was scored on (a bootstrap of every training row would
    cost seconds per node on large data, for the same answer)."""
    if z <= 0 or holdout_spread is None or not holdout_rows or not oof.rows:
        return False
    oof_spread = holdout_spread * math.sqrt(holdout_rows / oof.rows)
    gap = (oof.score - holdout) if direction == "maximize" else (holdout - oof.score)
    noise = math.hypot(holdout_spread, oof_spread)
    return gap > z * noise + 1e-12


def pooled(
    holdout: float, holdout_spread: float | None, holdout_rows: int, oof: OofResult
) -> tuple[float, float | None]:
    """The pooled score of a node on a small holdout: its holdout and out-of-fold scores
    weighted by the rows each was scored on, and the bootstrap spread of that mean (the two
    sets of rows resampled apart; None where either could not be resampled). A mean of the
    two metric values, not the metric of the pooled rows: for ranking metrics such as AUC
    the two differ a little, and each part stays a number the harness reports on its own."""
    total = holdout_rows + oof.rows
    score = (holdout * holdout_rows + oof.score * oof.rows) / total
    if holdout_spread is None or oof.spread is None:
        return score, None
    return score, math.hypot(holdout_spread * holdout_rows, oof.spread * oof.rows) / total
