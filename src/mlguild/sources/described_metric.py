"""Which registered metric a competition's description names: the first metric's words in
its evaluation section (else anywhere in it), the mean of two metrics it says it averages
(``mean(gauc, ndcg_at_k@5)``), the column whose groups it averages over (``group_column_of``),
and what the name means for the task's targets (``described_task_metric``: the column-wise form
for several targets, a set or one-hot form where the targets hold them). What a description
names that the registry lacks is ``metric_checks``' to refuse."""

from __future__ import annotations

import re

import pandas as pd

from ..core.errors import TaskError
from .metric_checks import evaluation_section, label_set_metric, one_hot_logloss

# Metric names as competition texts write them, most specific first: the first one the text
# mentions (in its evaluation section when it has one) is the task's metric.
_METRIC_PATTERNS: list[tuple[str, str]] = [
    # several columns scored together, before the one-column names they contain
    ("mcrmse", r"\bmcrmse\b|mean[- ]column[- ]?wise[- ](rmse\b|root[- ]mean[- ]squared?[- ]error)"),
    (
        "mean_columnwise_rmsle",
        r"\bmcrmsle\b|mean[- ]column[- ]?wise[- ](rmsle\b|root[- ]mean[- ]squared?[- ]log(arithmic)?[- ]error)",
    ),
    ("mean_columnwise_roc_auc", r"mean[- ]column[- ]?wise[- ](roc[- ])?auc|column[- ]?wise[- ]mean[- ](roc[- ])?auc"),
    ("mean_columnwise_logloss", r"mean[- ]column[- ]?wise[- ]log[- ]?loss|column[- ]?wise[- ]mean[- ]log[- ]?loss"),
    ("mean_columnwise_spearman", r"mean[- ]column[- ]?wise[- ]spearman|column[- ]?wise[- ]mean[- ]spearman"),
    ("multilabel_f1_micro", r"micro[- ](averaged )?f1|f1[- ]micro"),
    ("kl_divergence", r"\bkullback|\bkl[- ]divergence"),
    # the log of each group's MAE, averaged over the groups (CHAMPS: "calculated for each scalar
    # coupling type"): the words naming the groups end with a column's name
    (
        "group_log_mae",
        r"\blog(arithm)? of the mean absolute error\b[^.]{0,30}?\b(for|per|within|in) each\s+"
        r"(?P<group>[a-z][\w ]{0,40}?)(?=\s*(,|\.|\band\b|$))",
    ),
    ("jaccard_words", r"\bjaccard"),
    ("angular_distance", r"\bangular (error|distance)"),
    ("pf1", r"\bprobabilistic f1|\bpf1\b"),
    ("spearman", r"\bspearman"),
    ("pearson", r"\bpearson"),
    ("rmsle", r"root[- ]mean[- ]squared?[- ]log(arithmic)?[- ]error|\brmsle\b"),
    ("rmse", r"root[- ]mean[- ]squared?[- ]error|\brmse\b"),
    ("smape", r"\bsmape\b|symmetric mean absolute percentage error"),
    ("mae", r"mean[- ]absolute[- ]error|\bmae\b"),
    ("r2", r"coefficient of determination|\br2\b|\br\^2\b|r-squared"),
    ("qwk", r"quadratic(ally)?[- ]weighted (cohen'?s )?kappa|\bqwk\b"),
    ("mcc", r"\bmatthews'?s?[- ]correlation|\bmatthews\b|\bmcc\b"),
    ("map_at_k", r"\bmap@\s*\d+|mean average precision\s*@\s*\d+"),
    ("ndcg_at_k", r"\bndcg\s*@\s*\d+|normali[sz]ed discounted cumulative gain(\s*@\s*\d+)?|\bndcg\b"),
    ("gauc", r"\bgauc\b|\bgroup(ed)?[- ]auc\b|\bauc (averaged )?(per|within each|over) (user|group|query|session)s?\b"),
    ("roc_auc", r"area under (the )?(roc|receiver operating)|area under the curve\b|\broc[- ]auc\b|\bauc\b"),
    ("logloss", r"\blog[- ]?loss\b|logarithmic loss|cross[- ]entropy"),
    ("f1_macro", r"macro[- ](averaged )?f1|f1[- ]macro|mean f1"),
    ("f1", r"\bf1\b|\bf-score\b|\bf-measure\b"),
    ("error_rate", r"\btop[- ]?1 (classification )?error|\b(mis)?classification error( rate)?\b"),
    ("accuracy", r"\baccuracy\b|classification rate"),
]


# A one-column metric named by a description of a task with several target columns is the
# competition's column-wise form of it (the graders average it over the columns).
_SEVERAL = {
    "rmse": "mcrmse",
    "rmsle": "mean_columnwise_rmsle",
    "roc_auc": "mean_columnwise_roc_auc",
    "logloss": "mean_columnwise_logloss",
    "binary_logloss": "mean_columnwise_logloss",
    "f1": "multilabel_f1_micro",
    "f1_macro": "multilabel_f1_macro",
    "spearman": "mean_columnwise_spearman",
}


def several_targets_metric(name: str) -> str:
    """The column-wise metric a task with several target columns means by ``name``."""
    return _SEVERAL.get(name, name)


def metric_from_description(text: str) -> tuple[str, str, dict] | None:
    """(metric name, the phrase found, metric params) or None when the text names none known."""
    section = evaluation_section(text)
    for body in ([section] if section else []) + [text]:
        hits = []
        for name, pattern in _METRIC_PATTERNS:
            found = re.search(pattern, body, re.IGNORECASE)
            if found:
                hits.append((found.start(), name, found.group(0), found.groupdict().get("group")))
        both = _mean_of_two(body)
        if both is not None:
            return both
        if hits:
            _, name, phrase, group = min(hits, key=lambda hit: hit[:3])
            params: dict = {}
            if name == "map_at_k" or (name == "ndcg_at_k" and re.search(r"\d", phrase)):
                params["k"] = int(re.findall(r"\d+", phrase)[-1])
            if group:
                params[GROUP_WORDS] = group
            return name, phrase, params
    return None


# The words that name a metric's groups ("scalar coupling type"), kept in its params until
# ``group_column_of`` finds the column they name.
GROUP_WORDS = "group_words"


def group_column_of(params: dict, columns: list[str], folder: object) -> dict:
    """``params`` with the words naming the metric's groups replaced by the column they end with
    (``type`` for "scalar coupling type": the longest column name that ends the words, compared
    without case and with '_' as a space); a TaskError when no train and test column is it."""
    if GROUP_WORDS not in params:
        return params
    words = " ".join(str(params[GROUP_WORDS]).lower().split())
    named = [c for c in columns if words == (n := c.lower().replace("_", " ")) or words.endswith(f" {n}")]
    if not named:
        raise TaskError(
            f"the description scores each {words!r} apart, and no column of the train and test files is named so",
            f"pass the metric and its groups in task.yaml: metric_params: {{group_column: COLUMN}} (folder {folder})",
        )
    rest = {k: v for k, v in params.items() if k != GROUP_WORDS}
    return {**rest, "group_column": max(named, key=len)}


_MEAN_OF = re.compile(
    r"\b(?:mean|average)\s+of\s+(?:the\s+)?(?P<a>[^.,;\n]{1,80}?)\s+and\s+(?:the\s+)?(?P<b>[^.,;\n]{1,80}?)"
    r"(?=[.,;)\n]|$)",
    re.IGNORECASE,
)


def _one_metric(text: str) -> tuple[str, str] | None:
    """(metric, with its @k when it has one) of the first metric named in ``text``."""
    found = sorted(
        (m.start(), name, m.group(0)) for name, pattern in _METRIC_PATTERNS if (m := re.search(pattern, text, re.I))
    )
    if not found:
        return None
    _, name, phrase = found[0]
    digits = re.findall(r"@\s*(\d+)", phrase)
    return name, f"{name}@{digits[-1]}" if digits and name in ("map_at_k", "ndcg_at_k") else name


def _mean_of_two(body: str) -> tuple[str, str, dict] | None:
    """A metric the text says is the mean of two metrics ("the mean of GAUC and nDCG@5"): the
    mean of those two, as ``mean(gauc, ndcg_at_k@5)``."""
    for found in _MEAN_OF.finditer(body):
        a, b = _one_metric(found["a"]), _one_metric(found["b"])
        if a is not None and b is not None and a[0] != b[0]:
            return f"mean({a[1]}, {b[1]})", found.group(0), {}
    return None


# An F1 over label columns, named for a target of one label a row: micro-averaged, every row
# counts once (accuracy); macro-averaged, the F1 of each class, averaged (f1_macro).
_ONE_LABEL_F1 = {"multilabel_f1_micro": "accuracy", "multilabel_f1_macro": "f1_macro"}


def described_task_metric(
    named: tuple[str, str, dict], train: pd.DataFrame, targets: list[str], classes: bool, inputs: list[str],
    folder: object,
) -> tuple[str, dict, str]:  # fmt: skip
    """(metric, params, why) for the task of ``targets`` from the metric its description names:
    log loss over one probability column is binary; 0/1 target columns holding one outcome a
    row are ``logloss_columns``; an F1 over a set of labels a row is ``f1_sets``, over one label
    a row accuracy or macro F1; several targets take the column-wise form. ``classes``: the
    sample holds a probability column per class; ``inputs``: the columns of train and test,
    among which a metric's groups are named."""
    metric, phrase, params = named
    params = group_column_of(params, inputs, folder)
    one_hot = one_hot_logloss(train, targets, metric)
    sets = label_set_metric(train, targets, metric)
    if metric == "logloss" and not classes:
        metric = "binary_logloss"
    said = f"the description says {phrase!r}" + (f", the groups in {g!r}" if (g := params.get("group_column")) else "")
    if one_hot is not None:  # one outcome over 0/1 columns: a multi-class log loss over them
        metric, said = one_hot, f"{said}, and the target columns hold one outcome (one 1 a row)"
    elif sets is not None:  # an F1 over the labels of every row's set
        metric, said = sets, f"{said}, and {targets[0]!r} holds space-separated sets of labels"
    elif len(targets) == 1 and metric in _ONE_LABEL_F1:  # one label a row: the F1 over label columns is another
        metric, said = _ONE_LABEL_F1[metric], f"{said}, which over one label a row is {_ONE_LABEL_F1[metric]}"
    if len(targets) > 1:
        metric = several_targets_metric(metric)
    return metric, params, said
