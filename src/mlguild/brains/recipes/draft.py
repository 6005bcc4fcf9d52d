"""A recipe's first meta for a task: its parameters, feature switches and run settings,
fitted to the data profile and the metric (the catalogue itself is catalog.py)."""

from __future__ import annotations

from typing import Any

from ...metrics import per_column
from ...sandbox.backbones import TEXT
from ...task.column_kinds import UNUSABLE
from .catalog import RECIPES
from .recipe import Params, Recipe, RecipeMeta

# Metrics of relative errors: a log target suits them, and predictions below zero are no use.
RELATIVE_ERRORS = ("rmsle", "smape")


def _feature_defaults(recipe: Recipe, task: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    target = profile.get("target", {})
    # Fitting log1p(target) is what RMSLE rewards, and near it what SMAPE's relative errors do;
    # only for a target that is never negative. (Several targets: the mean column-wise RMSLE
    # too; the script takes logs only of the targets that are never negative.)
    log_target = per_column(task["metric"]) in RELATIVE_ERRORS and target.get("min", 0) >= 0
    if recipe.features == "pixels":
        return {"log_target": log_target, "pca_components": 50 if recipe.name == "pca_svc" else 0}
    if recipe.features == "images":
        return {"log_target": log_target}
    if recipe.features == "image_tensors":  # the side the backbone sees; a smaller one trains faster
        return {"log_target": log_target, "image_size": 224}
    if recipe.features == "backbone_images":
        return {"log_target": log_target, "flip_average": False}
    if recipe.features == "arrays":
        return {"log_target": log_target}
    if recipe.features == "spans":  # the template reads the source text as it is: nothing to switch
        return {}
    if recipe.features == "audio":
        # Clips are resampled to one rate: the data's own (the profile's most common) up to 22,050 Hz.
        rate = int((profile.get("files") or {}).get("sample_rate") or 16000)
        return {"log_target": log_target, "n_mels": 64, "sample_rate": min(rate, 22050)}
    text = "stats"
    if recipe.modality == "text":
        text = "tfidf" if recipe.encoding == "onehot" else "svd"
    sentences = {"sentence_embeddings": True, "sentence_weight": 1.0} if recipe.backbone == TEXT else {}
    return {
        **sentences,
        "log_target": log_target,
        "screen": _screen_size(recipe, profile),  # numeric columns kept per fold (0: all)
        "freq_encoding": False,
        # A network learns best from inputs of one scale and shape: numbers through a normal-quantile map.
        "quantile_numeric": recipe.model == "tabm",
        "text": text,  # stats | svd | tfidf: how free-text columns enter
        "max_features": 30000 if text == "tfidf" else 20000,
        "ngram_max": 2,
        "char_ngrams": True,
        "svd_components": 64 if recipe.modality == "text" else 16,
        "max_levels": 200,
        "min_count": 5,
        "target_encoding": False,  # out-of-fold category target means, fitted inside each fold
        "ratios": False,  # log-ratios of the leading positive numeric columns
    }


def _screen_size(recipe: Recipe, profile: dict[str, Any]) -> int:
    """How many numeric columns each fold keeps on wide data (at least 100 usable columns, and
    at least half as many as training rows), else 0. With that many columns, every model
    finds some noise column that fits the training rows by chance; a fold keeps the columns
    most associated with the target on its own fit rows. Tree recipes on feature frames only."""
    n_train = int(profile.get("n_train") or 0)
    usable = sum(c["kind"] not in UNUSABLE for c in profile.get("columns", []))
    if recipe.encoding not in ("native", "ordinal", "catboost") or usable < max(100, n_train / 2):
        return 0
    return max(20, min(100, n_train // 20))


def _run_defaults(recipe: Recipe, profile: dict[str, Any]) -> dict[str, Any]:
    n_train = int(profile.get("n_train") or 0)
    # Fewer folds on big data: each fold's model costs as much as the whole small-data run.
    n_folds = 5 if n_train <= 100_000 else 3
    # Kernel machines cost quadratic time in rows: cap them from the start. A network's epoch
    # costs in proportion to its rows, and it needs tens of them: its folds train on at most
    # 50,000 rows, or a usual run's time would stop it long before it converges.
    max_train_rows = 20_000 if recipe.model == "svm_rbf" and n_train > 25_000 else None
    if recipe.model == "tabm" and n_train > 60_000:
        max_train_rows = 50_000
    # seeds: models per fold, each with its own seed, averaged (the seed_averaging move)
    return {"n_folds": n_folds, "max_train_rows": max_train_rows, "cv_budget_share": 0.5, "seeds": 1}


# What a boosting model minimises when the task is scored by mean absolute error: the squared
# error's best constant is the mean, the absolute error's the median, and on a skewed target
# they are far apart (a model fitted for one loses to a constant on the other). The log of each
# group's absolute error (group_log_mae) is an absolute error too.
_ABSOLUTE_ERRORS = ("mae", "group_log_mae")
_ABSOLUTE_ERROR = {
    "lightgbm": ("objective", "l1"),
    "hist_gb": ("loss", "absolute_error"),
    "catboost": ("loss_function", "MAE"),
    "xgboost": ("objective", "reg:absoluteerror"),
}


def _params(recipe: Recipe, classification: bool, profile: dict[str, Any], metric: str) -> Params:
    params = recipe.defaults(classification)
    if metric in _ABSOLUTE_ERRORS and not classification and recipe.model in _ABSOLUTE_ERROR:
        name, value = _ABSOLUTE_ERROR[recipe.model]
        params[name] = value
    # A leaf of 20 rows is a sensible floor on real data, but on a few dozen rows it leaves
    # a tree almost no split to make: the floor shrinks with the data (1 row in 25), down to
    # 5 rows, below which a leaf's mean is mostly noise.
    leaf = recipe.knobs.get("min_leaf")
    if leaf in ("min_child_samples", "min_samples_leaf") and leaf in params:
        params[leaf] = min(params[leaf], max(5, int(profile.get("n_train") or 0) // 25))
    return params


def _ranking_features(recipe: Recipe, features: dict[str, Any]) -> dict[str, Any]:
    """A grouped ranker's script (templates/rank.py.j2) has no log target and no fold hooks:
    those switches are off for good (None), so no move turns them on to no effect; its own are
    each row's numbers against its group's (``group_relative``) and an entity's history with an
    item (``affinity``). A list recipe's (templates/lists.py.j2) has its own few."""
    if recipe.modality == "grouped_ranking":
        features.update(log_target=None, target_encoding=None, screen=0, group_relative=True, affinity=True)
    if recipe.features == "lists":  # candidates per source, and how many recent items they start from
        return {"candidates": 50, "recent": 30}
    return features


def draft_meta(name: str, task: dict[str, Any], profile: dict[str, Any]) -> RecipeMeta:
    """The meta of a fresh draft of recipe ``name`` with its default parameters."""
    recipe = RECIPES[name]
    classification = task["task_type"] in ("binary", "multiclass")
    return {
        "brain": "recipes",
        "recipe": name,
        "modality": recipe.modality,
        "params": _params(recipe, classification, profile, task["metric"]),
        "features": _ranking_features(recipe, _feature_defaults(recipe, task, profile)),
        "run": _run_defaults(recipe, profile),
        "moves": [],
        "move": None,
        "parent": None,
    }
