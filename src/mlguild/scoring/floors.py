"""Whether a run learned anything: its best holdout score against the constant floor.

A run always keeps its best submission, but when no node beat the score of a constant
prediction on the sealed holdout, the data gave the models nothing to learn from (or the
target cannot be predicted from these columns), and a user must be told so plainly rather
than handed a submission that only looks like a model. Only holdout numbers are used: the
test answers are graded once, and never to decide anything.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import NothingLearnable
from ..core.vocabulary import Event
from ..metrics import Direction, Score, get_metric
from ..task.folder import TaskSpec
from ..util.exact_csv import read_csv_exact


def write_prior_submission(spec: TaskSpec, train: Path, sample: Path, dest: Path) -> bool:
    """Write to ``dest`` the template ``sample`` filled with the best constant the training
    labels give (the majority class, the class shares, the positive share, the mean, or the
    median for MAE, the most popular items for a ranked list, the labels whose set scores best
    for label sets): a stronger floor than a template's
    stand-in values. False when the task has no such constant (several targets)."""
    kind = get_metric(spec.metric).prediction
    if len(spec.target_columns) != 1:
        return _write_prior_per_column(spec, train, sample, dest, kind)
    target = read_csv_exact(train, usecols=[spec.target_columns[0]]).iloc[:, 0]
    target = target[target != ""]
    frame = pd.read_csv(sample, dtype=str, keep_default_na=False)
    columns = spec.prediction_columns
    if target.empty or not columns:  # no columns: a ranked file, whose floor is the sample's own order
        return False
    if kind == "ranked_list":
        # The k items the most training rows list (a single label counts as a list of one):
        # the popularity floor of a recommender.
        k = int(spec.metric_params.get("k", 5))
        counts = target.str.split().explode().value_counts()
        frame[columns[0]] = " ".join(counts.index[:k].astype(str))
    elif kind == "label_set":
        frame[columns[0]] = " ".join(constant_label_set(target))
    elif kind == "label":
        frame[columns[0]] = target.mode().iloc[0]
    elif kind == "probability":
        frame[columns[0]] = float((target == (spec.positive_label or "1")).mean())
    elif kind == "class_probabilities":
        shares = target.value_counts(normalize=True)
        for column, label in zip(columns, spec.classes or columns):
            frame[column] = float(shares.get(label, 0.0))
    else:
        values = pd.to_numeric(target, errors="coerce").dropna()
        if values.empty:
            return False
        frame[columns[0]] = float(values.median() if spec.metric == "mae" else values.mean())
    frame.to_csv(dest, index=False)
    return True


def _write_prior_per_column(spec: TaskSpec, train: Path, sample: Path, dest: Path, kind: str) -> bool:
    """The prior of each target column in its own submission column (several targets): the
    positive share, the most common label, the mean (the median for MAE). False when a
    target is not a submission column or has no usable label."""
    if kind not in ("value", "probability", "label") or any(
        c not in spec.prediction_columns for c in spec.target_columns
    ):
        return False
    labels = read_csv_exact(train, usecols=spec.target_columns)
    frame = pd.read_csv(sample, dtype=str, keep_default_na=False)
    median = get_metric(spec.metric).name == "mae"
    for column in spec.target_columns:
        target = labels[column][labels[column] != ""]
        if kind == "probability":
            value: object = float((target == (spec.positive_label or "1")).mean()) if len(target) else None
        elif kind == "label":
            value = target.mode().iloc[0] if len(target) else None
        else:
            values = pd.to_numeric(target, errors="coerce").dropna()
            value = (float(values.median() if median else values.mean())) if len(values) else None
        if value is None:
            return False
        frame[column] = value
    frame.to_csv(dest, index=False)
    return True


def floors(records: list[dict]) -> list[float]:
    """The constant floors the run measured at creation (the sample submission's, and the
    training prior's where recorded), from its journal."""
    for rec in records:
        if rec.get("type") == Event.RUN_STARTED:
            return [rec[key] for key in ("floor_score", "prior_floor_score") if rec.get(key) is not None]
    return []


def check_learned(best_score: float | None, floor_scores: list[float], direction: Direction, metric: str) -> None:
    """Raise NothingLearnable when the best holdout score does not beat every constant floor."""
    if best_score is None or not floor_scores:
        return
    best = Score(best_score, direction)
    floor = max((Score(f, direction) for f in floor_scores), key=lambda s: s.key())
    if not best.better_than(floor):
        raise NothingLearnable(
            f"nothing learnable: no model beat a constant prediction on the holdout "
            f"(best {metric} {best_score:.6g}, constant {floor.value:.6g}); the final submission is no better than "
            "predicting the same value for every row",
            "check that the target can be predicted from the other columns (and that the right column is the "
            "target), or give the run more time with `mlguild resume RUN --time 30m`",
        )


def constant_label_set(target: pd.Series) -> list[str]:
    """The one label set that, given to every row, scores the best micro F1 on ``target``'s
    sets: the labels by their share of rows, most common first, for as long as each raises
    2 * (sum of the chosen shares) / (their count + the sum of every share), the F1 it scores."""
    sets = [set(text.split()) for text in target]
    shares = pd.Series([label for labels in sets for label in labels]).value_counts() / max(len(sets), 1)
    chosen: list[str] = []
    best = covered = 0.0
    for label, share in shares.items():
        score = 2 * (covered + share) / (len(chosen) + 1 + float(shares.sum()))
        if chosen and score <= best:
            break
        chosen, best, covered = [*chosen, str(label)], score, covered + float(share)
    return chosen
