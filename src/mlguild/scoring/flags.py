"""Leak checks on results: scores and predictions that should make a person look twice.

A holdout score at the metric's perfect value (on a holdout large enough for that to be
surprising), or predictions that are the same for every
row, are not errors (a trivial task can be solved perfectly; a constant can be a baseline),
so they are flagged on the node and in the journal rather than rejected.
"""

from __future__ import annotations

from pathlib import Path

from ..metrics import Metric
from .strict_csv import read_table

PERFECT_SCORE = "perfect_score"
CONSTANT_PREDICTIONS = "constant_predictions"
LEAKY_CV = "leaky_cv"  # set by the executor (mlguild.scoring.oof): out-of-fold far better than holdout
_TOLERANCE = 1e-9
# Below this many holdout rows a perfect score is what an easy task often gets (a perfect AUC
# on the 91-row holdout of the breast-cancer data): flagging it as a possible leak alarms for nothing.
MIN_PERFECT_ROWS = 200


def result_flags(score: float | None, metric: Metric, predictions: Path, id_column: str) -> list[str]:
    """Flags for a scored node; ``predictions`` is its (already validated) holdout file."""
    flags = []
    header, columns = read_table(predictions, max_bytes=None)
    values = [col for name, col in zip(header, columns) if name != id_column]
    rows = len(columns[0]) if columns else 0
    perfect = score is not None and metric.perfect is not None and abs(score - metric.perfect) <= _TOLERANCE
    if perfect and rows >= MIN_PERFECT_ROWS:
        flags.append(PERFECT_SCORE)
    if values and len(values[0]) > 1 and all(len(set(col)) == 1 for col in values):
        flags.append(CONSTANT_PREDICTIONS)
    return flags


def describe(flag: str, metric: Metric, score: float | None = None, oof_score: float | None = None) -> str:
    """What ``flag`` means for a person or a prompt; ``score`` and ``oof_score`` are the
    node's holdout and out-of-fold scores, which the leaky_cv warning names."""
    scores = "" if score is None or oof_score is None else f" ({oof_score:.5g} against {score:.5g})"
    return {
        PERFECT_SCORE: f"the holdout {metric.name} is perfect ({metric.perfect}); check the code for a label leak",
        CONSTANT_PREDICTIONS: "every holdout prediction is the same value: the model learned nothing from the features",
        LEAKY_CV: f"its out-of-fold {metric.name} is far better than its holdout {metric.name}{scores}, beyond "
        "the noise of both: its validation leaks (a target-derived feature, a preprocessor fitted on all rows, "
        "groups or duplicates split between folds); its out-of-fold predictions are kept out of blends",
    }.get(flag, flag)
