"""Out-of-fold predictions scored by the harness, and the check that a validation is honest.

A script's ``output/oof.csv`` predicts the training rows with models that did not train on
them. The harness scores it on the training labels (which scripts can read too: it is a
measured number, never one that ranks a node) and sets it beside the holdout score. An
out-of-fold score far better than the holdout's, beyond the noise of both, means the
validation leaked (a target-derived feature, a preprocessor fitted across folds, groups or
near-duplicates split between folds): such a node is flagged ``leaky_cv``, and its
out-of-fold predictions, which would mislead a blend's weights, are kept out of every blend.

On rows ordered in time (a ``time_column``) the holdout is the future of every training row,
and honest out-of-fold scores on the past beat it (drift, not a leak): there the check
compares like with like, the out-of-fold rows nearest the holdout in time (as many as it
holds: the latest validation fold's) against the holdout. A grouped ranking's out-of-fold
rows are matched to their labels by (group, item) keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

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

    def _keys(self) -> list[str]:
        """The columns that name a training row: the id, and where ids repeat the item keys."""
        return [self.spec.id_column, *([] if self.spec.ids_unique else self.spec.key_columns)]

    def _train_labels(self) -> pd.DataFrame:
        """One row per key (see ``_keys``) with its labels and, for a task ordered in time, its
        time (``_when``; for a grouped ranking its group's latest, as the firewall's split uses)."""
        if self._labels is None:
            spec, keys = self.spec, self._keys()
            scored = [*spec.target_columns, *spec.metric_input_columns]
            wanted = [*keys, *scored, *([spec.time_column] if spec.time_column else [])]
            present = set(read_csv_exact(self.train_path, nrows=0).columns)
            # the columns it needs alone: on ten million rows the whole file is gigabytes
            train = read_csv_exact(self.train_path, usecols=[c for c in dict.fromkeys(wanted) if c in present])
            labels = train[list(dict.fromkeys([*keys, *scored]))].copy()
            if spec.time_column and spec.time_column in train.columns:
                when = pd.to_datetime(train[spec.time_column], format="mixed", utc=True, errors="coerce")
                if not spec.ids_unique:
                    when = when.groupby(train[spec.id_column].to_numpy()).transform("max")
                labels["_when"] = when.to_numpy()
            if not spec.ids_unique and labels.duplicated(keys).any():
                labels = labels.iloc[0:0]  # (group, item) repeats: rows cannot be matched to labels
            self._labels = labels.drop_duplicates(keys).set_index(keys)
        return self._labels

    def score(self, path: Path, spread: bool = False, latest: int | None = None) -> OofResult | None:
        """The out-of-fold file's score and rows (and, with ``spread``, its bootstrap spread), or
        None where it cannot be scored row by row against training labels (unknown rows, keys
        that repeat, values the metric cannot take). With ``latest`` on a task ordered in time:
        the score of its latest rows only, about ``latest`` of them (rows, or whole groups, that
        share the time at the cut kept together); None on a task with no time column."""
        keys = self._keys()
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            labels = self._train_labels()
            rows = pd.MultiIndex.from_frame(frame[keys]) if len(keys) > 1 else pd.Index(frame[keys[0]])
            answers = labels.loc[rows].reset_index()
            if latest is not None:
                if "_when" not in answers.columns or not latest:
                    return None
                when = answers["_when"]
                cut = when.sort_values(ascending=False).iloc[min(latest, len(when)) - 1]
                chosen = (when >= cut).to_numpy()
                if chosen.all() or not chosen.any():
                    return None  # no earlier rows to tell apart from the latest
                frame, answers = frame[chosen], answers[chosen].reset_index(drop=True)
            answers = answers.drop(columns=["_when"], errors="ignore")
            known = {v for c in self.spec.target_columns for v in labels[c].unique().tolist()}
            scorer = Scorer(self.spec, answers=answers, max_bytes=None, labels=known)
            with TemporaryDirectory() as tmp:
                if latest is not None:  # the scorer reads a file: the latest rows as one
                    path = Path(tmp) / "oof_latest.csv"
                    frame.to_csv(path, index=False)
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
