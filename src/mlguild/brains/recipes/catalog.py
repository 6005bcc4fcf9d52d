"""The recipe families: which model, which features, which defaults, for which modality
(draft.py fits a family's defaults to a task; mlguild.brains.recipes.recipe says what a recipe
and a recipe meta are; the families of files and arrays are in catalog_media, the ranking
families in catalog_ranking), in draft order per modality, with the safest family of each
that debug falls back to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...metrics import get_metric
from ...sandbox.backbones import TEXT
from .catalog_media import MEDIA_RECIPES
from .catalog_ranking import LIST_RECIPES, RANKING_RECIPES, SPAN_RECIPES
from .recipe import GBDT_KNOBS, XGB_KNOBS, Recipe, lightgbm_defaults, xgboost_defaults

_RECIPE_LIST = [
    # ---- tabular, in draft order: strongest usual baseline first, then different biases
    Recipe(
        "lightgbm",
        "tabular",
        "LightGBM on native categorical features",
        "gradient-boosted trees are the strongest usual baseline on tabular data",
        "lightgbm",
        "columns",
        "native",
        lightgbm_defaults(2000, 0.05, 31, 0.8, 100),
        GBDT_KNOBS,
        ("class_weight", "balanced"),
        stochastic=True,
    ),
    Recipe(
        "linear",
        "tabular",
        "Linear model on one-hot categories and scaled numbers",
        "a linear model has a very different bias from trees: a useful baseline and a diverse ensemble member",
        "linear",
        "columns",
        "onehot",
        lambda c: dict(C=1.0, max_iter=2000) if c else dict(alpha=1.0),
        {"C": "C", "alpha": "alpha"},
        ("class_weight", "balanced"),
    ),
    Recipe(
        "hist_gb",
        "tabular",
        "scikit-learn HistGradientBoosting",
        "a second boosting implementation with honest early stopping and no extra dependency",
        "hist_gb",
        "columns",
        "native",
        lambda c: dict(
            max_iter=1000,
            learning_rate=0.05,
            max_leaf_nodes=31,
            min_samples_leaf=20,
            l2_regularization=0.0,
            n_iter_no_change=50,
        ),
        dict(
            rounds="max_iter",
            lr="learning_rate",
            size="max_leaf_nodes",
            l2="l2_regularization",
            min_leaf="min_samples_leaf",
        ),
        ("class_weight", "balanced"),
    ),
    Recipe(
        "catboost",
        "tabular",
        "CatBoost with its own categorical encoding",
        "ordered target statistics often win when categorical columns carry the signal",
        "catboost",
        "columns",
        "catboost",
        # one-hot for small categoricals and pairs of categoricals at most keep CatBoost
        # several times faster than its defaults, at no loss seen on the bundled examples
        lambda c: dict(
            iterations=2000,
            learning_rate=0.08,
            depth=6,
            l2_leaf_reg=3.0,
            one_hot_max_size=10,
            max_ctr_complexity=2,
            early_stopping_rounds=100,
        ),
        dict(rounds="iterations", lr="learning_rate", size="depth", l2="l2_leaf_reg"),
        ("auto_class_weights", "Balanced"),
        stochastic=True,
    ),  # Bayesian bagging of rows
    Recipe(
        "xgboost",
        "tabular",
        "XGBoost (histogram method, native categories)",
        "depth-wise trees regularise differently from LightGBM's leaf-wise growth",
        "xgboost",
        "columns",
        "native",
        xgboost_defaults(2000, 6, 100),
        XGB_KNOBS,
        stochastic=True,
    ),
    Recipe(
        "random_forest",
        "tabular",
        "Random forest on integer-coded categories",
        "bagged deep trees need little tuning and make errors unlike boosting's",
        "forest",
        "columns",
        "ordinal",
        lambda c: dict(n_estimators=300, min_samples_leaf=1 if c else 2, max_features="sqrt" if c else 0.5),
        dict(trees="n_estimators", min_leaf="min_samples_leaf"),
        ("class_weight", "balanced_subsample"),
        ("RandomForestClassifier", "RandomForestRegressor"),
    ),
    # Last: the costliest family on the CPU (30-40 s a draft on 7,000 rows), drafted once the
    # cheaper ones are, so a short run's time goes to them first.
    Recipe(
        "tabm",
        "tabular",
        "TabM: an ensemble of k weight-sharing MLPs (PyTorch, CPU) on quantile-mapped numbers and one-hot categories",
        "a neural network's smooth functions of all columns at once err unlike trees: the ensemble's most different member",
        "tabm",
        "columns",
        "onehot",
        # Smaller than the paper's defaults (d_block 512, 3 blocks, k 32): on two CPU cores
        # these train several times faster. Epochs stop early on a tenth of the fit rows.
        lambda c: dict(
            d_block=256,
            n_blocks=2,
            k=16,
            dropout=0.1,
            learning_rate=0.002,
            weight_decay=0.0003,
            batch_size=256,
            epochs=32,
            patience=6,
        ),
        dict(epochs="epochs"),
        stochastic=True,
        needs="tabm",
    ),
    # ---- text
    Recipe(
        "tfidf_linear",
        "text",
        "TF-IDF word and character n-grams with a linear model",
        "sparse n-gram features with a linear model are the classic strong text baseline",
        "linear",
        "columns",
        "onehot",
        lambda c: dict(C=4.0, max_iter=2000) if c else dict(alpha=1.0),
        {"C": "C", "alpha": "alpha"},
        ("class_weight", "balanced"),
    ),
    Recipe(
        "tfidf_sentences",
        "text",
        "TF-IDF n-grams and pretrained sentence embeddings with a linear model",
        "a pretrained sentence encoder reads meaning (paraphrase, negation) that n-grams miss",
        "linear",
        "columns",
        "onehot",
        lambda c: dict(C=4.0, max_iter=2000) if c else dict(alpha=1.0),
        {"C": "C", "alpha": "alpha"},
        ("class_weight", "balanced"),
        needs="sentence_transformers",
        backbone=TEXT,
    ),
    Recipe(
        "tfidf_svm",
        "text",
        "TF-IDF n-grams with a calibrated linear SVM",
        "a margin-based linear model often beats logistic regression on sparse text",
        "svm_linear",
        "columns",
        "onehot",
        lambda c: dict(C=0.5) if c else dict(C=0.1, epsilon=0.0),
        {"C": "C"},
        ("class_weight", "balanced"),
    ),
    Recipe(
        "tfidf_lightgbm",
        "text",
        "LightGBM on TF-IDF components and text statistics",
        "trees on a dense summary of the text can mix wording with length and the other columns",
        "lightgbm",
        "columns",
        "native",
        lightgbm_defaults(2000, 0.05, 31, 0.5, 100),
        GBDT_KNOBS,
        ("class_weight", "balanced"),
        stochastic=True,
    ),
]

_RECIPE_LIST += MEDIA_RECIPES + RANKING_RECIPES + LIST_RECIPES + SPAN_RECIPES
# The script template of each modality that has its own (the others: script.py.j2).
SCRIPT_TEMPLATES = {"grouped_ranking": "rank.py.j2", "ranked_lists": "lists.py.j2", "text_spans": "spans.py.j2"}

RECIPES: dict[str, Recipe] = {r.name: r for r in _RECIPE_LIST}
# Draft order per modality; the safest family per modality is what debug falls back to.
DRAFT_ORDER: dict[str, list[str]] = {}
for _r in _RECIPE_LIST:
    DRAFT_ORDER.setdefault(_r.modality, []).append(_r.name)
# Image files that are photographs go to the pretrained backbone first; every image file can
# also be read into pixels by the image-array recipes (features/file_pixels.py.j2), which are
# all small glyph-like images get (photo_like decides).
PHOTO_ORDER = DRAFT_ORDER.pop("image_files") + DRAFT_ORDER["image_array"]
DRAFT_ORDER["image_files"] = DRAFT_ORDER["image_array"]
FALLBACK = {
    "audio_files": "audio_linear",
    "array_files": "array_linear",
    "tabular": "hist_gb",
    "text": "tfidf_linear",
    "image_array": "pixels_linear",
    "image_files": "pixels_linear",
    "grouped_ranking": "pointwise",
    "ranked_lists": "candidates_mix",
    "text_spans": "copy_source",
}


def recipe_modality(task: dict[str, Any]) -> str:
    """Which family of recipes serves ``task``: its modality, or for a ranking task
    ``grouped_ranking`` (scored per (group, item) row) or ``ranked_lists`` (a list per row), for
    a free-text metric ``text_spans`` (a phrase of the row's own text)."""
    if "metric" in task and get_metric(task["metric"]).free_text:
        return "text_spans"
    if task.get("task_type") == "ranking":
        return "ranked_lists" if get_metric(task["metric"]).prediction == "ranked_list" else "grouped_ranking"
    return str(task.get("modality", "tabular"))


def photo_like(profile: Mapping[str, Any] | None) -> bool:
    """Whether a task's image files look like photographs (colour, or at least 64 px on their
    short side), which a pretrained backbone reads best, rather than small grey glyphs
    (digits, letters), on which the small CNN on 32 x 32 grey pixels does well and fast."""
    files = (profile or {}).get("files") or {}
    return bool(files.get("colour")) or float(files.get("min_side") or 0) >= 64


def recipes_for(task: dict[str, Any], profile: Mapping[str, Any] | None = None) -> list[str]:
    """Recipe names that serve this task and can run in this environment, in draft order
    (``profile``: the data profile, which says what image files look like)."""
    modality = recipe_modality(task)
    names = DRAFT_ORDER.get(modality, DRAFT_ORDER["tabular"])
    if modality == "image_files" and photo_like(profile):
        names = PHOTO_ORDER
    return [name for name in names if RECIPES[name].available()]
