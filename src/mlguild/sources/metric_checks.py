"""What a competition's text and columns say against the registered metric inference would pick.

A description that names a metric mlguild does not have (Kendall's tau, a log of the
MAE per type, a Dice coefficient, ...) often contains a registered metric's words too ("mean
absolute error" in "the log of the mean absolute error"; "AUC" in "the weighted AUC"). Taking
those words at face value states a task with confidence that the grader does not score, so
inference refuses in one line instead, and asks for ``--metric``. The same for an evaluation
that leaves some rows unscored, and for one-hot outcome columns scored by log loss (one
class per row spread over columns: their column-wise mean is another number)."""

from __future__ import annotations

import re

import pandas as pd

from ..core.errors import TaskError
from .columns import holds_label_sets

# Metrics descriptions name that the registry lacks, with the words that name them. Where one
# of these starts before a registered metric's words (or where they start, and is longer), it is the metric.
UNREGISTERED: list[tuple[str, str]] = [
    (
        "a modified metric",
        r"\bmodified (version|form|variant) of (the )?\[?(\w+[- ]+){0,3}?(score|metric|coefficient|loss|error|f1|auc)",
    ),
    ("a combination of metrics", r"\bcombines (several|multiple|two|three) (sub-?)?metrics\b"),
    ("log of the MAE", r"\blog(arithm)? of the mean absolute error|\blog[- ]mae\b"),
    ("weighted AUC", r"\bweighted (roc[- ])?auc\b|\bweighted area under"),
    ("weighted log loss", r"\bweighted (multi[- ]label )?(logarithmic loss|log[- ]?loss)"),
    ("Kaggle's mean F1 over label sets", r"\bmean ?f1[- ]?score\b|\bmeanfscore\b"),
    ("Kendall's tau", r"\bkendall"),
    ("Levenshtein distance", r"\blevenshtein|\bedit distance"),
    ("word error rate", r"\b(word|character|phoneme|label) error rate|\bwer\b"),
    ("Dice coefficient", r"\bdice\b|\bs(ø|o)rensen"),
    ("intersection over union", r"\bintersection over union|\biou\b"),
    ("detection mean average precision", r"\bmean average precision\b(?!\s*(@|at\s+\d))"),
    ("percentile distance error", r"\bpercentile distance"),
    ("Laplace log likelihood", r"\blaplace log[- ]likelihood"),
    ("lwlrap", r"\blwlrap\b|label[- ]weighted label[- ]ranking"),
    ("mean absolute percentage error", r"\bmape\b|(?<!symmetric )\bmean absolute percentage error"),
]

# Names above that are registered metrics' in some readings, not in others: what to say instead.
_AMBIGUOUS = {
    "Kaggle's mean F1 over label sets": (
        "is ambiguous: Kaggle's Mean F1 averages each row's F1 (f1_sets_mean), while MLE-bench's graders "
        "and a micro-averaged F1 pool the labels of every row (f1_sets; over one label a row, accuracy)",
        "pass the one the grader computes: mlguild run {folder} --metric f1_sets (or f1_sets_mean, or accuracy)",
    ),
}

# Words that put a registered metric's words in the place of the unregistered one named just before
# ("MeanFScore, which at Kaggle is actually a micro-averaged F1-score"): then the registered one is it.
_CORRECTION = r"^[^.]{0,60}(\b(actually|in fact|that is)\b|\bi\.e\.)[^.]{0,30}$"

# Words saying the grader leaves some rows out: a metric over every row is then another number.
_PARTIAL = r"\b(is|are|will be) not (scored|evaluated)\b"


def evaluation_section(text: str) -> str | None:
    """The body of the text's evaluation section (up to the next heading), if it has one."""
    section = re.search(r"^#+\s*evaluation.*?$(.*?)(?=^#+\s|\Z)", text, re.IGNORECASE | re.MULTILINE | re.DOTALL)
    return section.group(1) if section else None


def refuse_unregistered(
    text: str, known_phrase: str | None, folder: object, defer_ambiguous: bool = False
) -> TaskError | None:
    """TaskError when the text's metric is one the registry lacks: the evaluation section, else the
    whole text, decides, and in it the words that start first (at the same start, the longer words).
    With ``defer_ambiguous`` a metric whose reading depends on the grader (Mean F1) is returned, not
    raised: the caller settles it once it knows the target (see ``mean_f1_of_sets``)."""
    deferred = None
    section = evaluation_section(text)
    for body in ([section] if section else []) + [text]:
        hits = [(m.start(), name, m.group(0)) for name, p in UNREGISTERED if (m := re.search(p, body, re.I))]
        known = body.lower().find(known_phrase.lower()) if known_phrase else -1
        if hits:
            start, name, phrase = min(hits)
            corrected = known > start and re.search(_CORRECTION, body[start:known], re.I) is not None
            earlier = known < 0 or start < known or (start == known and len(phrase) > len(str(known_phrase)))
            if earlier and not corrected and name in _AMBIGUOUS:
                why, fix = _AMBIGUOUS[name]
                deferred = TaskError(f"the description's metric ({phrase!r}) {why}", fix.format(folder=folder))
                if not defer_ambiguous:
                    raise deferred
                break
            if earlier and not corrected:
                raise TaskError(
                    f"the description's metric is {name} ({phrase!r}), which mlguild does not have",
                    f"pass the registered metric to optimise instead: mlguild run {folder} --metric NAME",
                )
        if known >= 0 or hits:
            break
    if section and (found := re.search(_PARTIAL, section, re.I)):
        raise TaskError(
            f"the description's evaluation leaves some rows unscored ({found.group(0)!r}) and names no "
            "column value that picks them",
            f'name the rows the grader scores: mlguild run {folder} --metric "NAME where COLUMN=VALUE" '
            "(or --metric NAME to score every row)",
        )
    return deferred


def mean_f1_of_sets(train: pd.DataFrame, targets: list[str], deferred: TaskError, notes: list[str]) -> str:
    """The metric a description's Mean F1 is in MLE-bench's prepared layout, where the target holds
    sets of labels: ``f1_sets``, the micro F1 of the pooled labels, which its graders compute for
    every competition whose description says Mean F1 (facebook-recruiting-iii-keyword-extraction,
    plant-pathology-2021-fgvc8), said in ``notes``; ``deferred`` (the ambiguity) is raised for any
    other target."""
    if len(targets) == 1 and targets[0] in train and holds_label_sets(train[targets[0]]):
        notes.append(
            f"metric f1_sets: the description's Mean F1 over {targets[0]!r}'s sets of labels, in MLE-bench's "
            "layout, is the micro F1 of the pooled labels its graders compute (Kaggle's per-row mean: --metric f1_sets_mean)"
        )
        return "f1_sets"
    raise deferred


def check_scored_rows(params: dict, train_header: list[str], test_header: list[str], files: str) -> None:
    """A TaskError when a column that picks the scored rows (``--metric "mae where u_out=0"``) is
    not a column of both the train and the test file (``files`` names them)."""
    for column in params.get("scored_rows", {}):
        if column not in train_header or column not in test_header:
            both = [c for c in train_header if c in test_header]
            raise TaskError(
                f"--metric scores the rows by the column {column!r}, which {files} lacks",
                f"name a column of both: {', '.join(both[:12])}",
            )


def one_hot_logloss(train: pd.DataFrame, targets: list[str], metric: str) -> str | None:
    """``logloss_columns`` when several 0/1 target columns hold one outcome (exactly one 1 a row)
    and the description's metric is log loss: a multi-class log loss over the columns (lmsys'
    winner_model_a, winner_model_b, winner_tie), not the mean of each column's binary log loss;
    None otherwise."""
    if len(targets) < 2 or metric != "logloss" or not all(t in train for t in targets):
        return None
    values = train[targets].apply(pd.to_numeric, errors="coerce")
    one_hot = values.isin([0, 1]).all().all() and (values.sum(axis=1) == 1).all()
    return "logloss_columns" if one_hot else None


def label_set_metric(train: pd.DataFrame, targets: list[str], metric: str) -> str | None:
    """The label-set metric that an F1 named by a description means when the one target holds
    space-separated sets of labels (``147 616 813``): the graders pool the sets' labels, as
    ``f1_sets`` does (a micro F1); None when the target holds no such sets or the metric is no
    F1. A macro F1 over the sets' labels is refused: no registered metric computes it."""
    if len(targets) != 1 or targets[0] not in train or not holds_label_sets(train[targets[0]]):
        return None
    if metric in ("multilabel_f1_micro", "f1"):
        return "f1_sets"
    if metric in ("multilabel_f1_macro", "f1_macro"):
        raise TaskError(
            f"the target {targets[0]!r} holds space-separated sets of labels, scored by a macro F1 over the "
            "sets' labels: no registered metric computes that",
            "pass --metric f1_sets (micro F1 over the sets) or f1_sets_mean (the mean of each row's F1), "
            "or write task.yaml with one 0/1 column per label as the targets (see docs/guides/task-folders.md)",
        )
    return None


# Metrics defined over a number of target columns: (what the number must be, what they score).
_TARGET_COUNTS = {
    "kl_divergence": (lambda n: n >= 2, "compares distributions over several target columns"),
    "logloss_columns": (lambda n: n >= 2, "scores one outcome spread over several 0/1 target columns"),
    "angular_distance": (lambda n: n == 2, "scores a direction given by two target columns (azimuth, zenith)"),
}


def refuse_target_count(metric: str, targets: list[str], folder: object) -> None:
    """TaskError when ``metric`` cannot score a task of these target columns."""
    if metric in _TARGET_COUNTS and not _TARGET_COUNTS[metric][0](len(targets)):
        raise TaskError(
            f"the metric {metric} {_TARGET_COUNTS[metric][1]}, but the task has {len(targets)}: {targets}",
            f"pass the metric to optimise instead: mlguild run {folder} --metric NAME",
        )
