"""Moves: small, named changes to a recipe meta, each with the reason it may help.

Improve steps apply one move (or, once every single move has been tried on a parent, a
pair); debug steps apply ``shrink`` (the run was too slow or too big) or undo the last
change. A move only edits the meta; the script is rendered again from it, so the code
always says exactly what the meta says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .recipe import Recipe, RecipeMeta

Meta = RecipeMeta


@dataclass(frozen=True)
class Facts:
    """What moves need to know about the task and data, computed once per proposal."""

    classification: bool
    metric: str
    has_categorical: bool
    has_numeric: bool
    has_text_columns: bool
    target_min: float | None
    target_skew: float
    minority_fraction: float
    n_classes: int
    n_train: int
    max_levels: int = 0  # most distinct values of any categorical column
    n_numeric: int = 0
    time_ordered: bool = False  # folds are expanding windows in time

    @classmethod
    def of(cls, task: dict[str, Any], profile: dict[str, Any]) -> Facts:
        columns = profile.get("columns", [])
        kinds = {c["kind"] for c in columns}
        target = profile.get("target", {})
        return cls(
            classification=task["task_type"] in ("binary", "multiclass"),
            metric=task["metric"],
            has_categorical="categorical" in kinds,
            has_numeric="numeric" in kinds,
            has_text_columns="text" in kinds or bool(task.get("text_columns")),
            target_min=target.get("min"),
            target_skew=float(target.get("skew") or 0.0),
            minority_fraction=float(target.get("minority_fraction") or 0.5),
            n_classes=int(target.get("n_classes") or 2),
            n_train=int(profile.get("n_train") or 0),
            max_levels=max((int(c.get("n_unique") or 0) for c in columns if c["kind"] == "categorical"), default=0),
            n_numeric=sum(c["kind"] == "numeric" for c in columns),
            time_ordered=bool(task.get("time_column")),
        )


@dataclass(frozen=True)
class Move:
    name: str
    why: str
    applies: Callable[[Meta, Recipe, Facts], bool]
    apply: Callable[[Meta, Recipe, Facts], None]  # edits a copy of the meta in place


def _role(recipe: Recipe, meta: Meta, role: str) -> str:
    """The parameter that plays ``role``; for moves whose ``applies`` made sure it exists."""
    name = _knob(recipe, meta, role)
    if name is None:
        raise KeyError(f"recipe {recipe.name} has no {role} parameter in this meta")
    return name


def _knob(recipe: Recipe, meta: Meta, role: str) -> str | None:
    """The parameter that plays ``role`` for this recipe, if the meta has it."""
    name = recipe.knobs.get(role)
    return name if name is not None and name in meta["params"] else None


def _has(*roles: str) -> Callable[[Meta, Recipe, Facts], bool]:
    return lambda meta, recipe, facts: all(_knob(recipe, meta, r) for r in roles)


def _scale(meta: Meta, name: str, factor: float, low: float, high: float, integer: bool = False) -> None:
    value = min(max(meta["params"][name] * factor, low), high)
    meta["params"][name] = int(round(value)) if integer else float(f"{value:.6g}")


def _is_depth(name: str) -> bool:
    return name in ("max_depth", "depth")


def _resize_trees(meta: Meta, recipe: Recipe, grow: bool) -> None:
    name = _role(recipe, meta, "size")
    if _is_depth(name):
        cap = 10 if name == "depth" else 12  # CatBoost's symmetric trees double per level
        meta["params"][name] = min(cap, meta["params"][name] + 2) if grow else max(3, meta["params"][name] - 2)
    else:
        _scale(meta, name, 2.0 if grow else 0.5, 7, 255, integer=True)
    leaf = _knob(recipe, meta, "min_leaf")
    if leaf and not grow:
        _scale(meta, leaf, 2.0, 1, 500, integer=leaf != "min_child_weight")


def _lower_lr(meta: Meta, recipe: Recipe, facts: Facts) -> None:
    _scale(meta, _role(recipe, meta, "lr"), 0.5, 0.003, 1.0)
    _scale(meta, _role(recipe, meta, "rounds"), 2.0, 50, 20000, integer=True)


def _penalty(stronger: bool) -> Callable[[Meta, Recipe, Facts], None]:
    def apply(meta: Meta, recipe: Recipe, facts: Facts) -> None:
        if _knob(recipe, meta, "C"):
            _scale(meta, "C", 0.25 if stronger else 4.0, 1e-4, 1e4)
        else:
            _scale(meta, "alpha", 4.0 if stronger else 0.25, 1e-4, 1e5)

    return apply


def _l2(meta: Meta, recipe: Recipe, facts: Facts) -> None:
    name = _role(recipe, meta, "l2")
    meta["params"][name] = float(f"{max(meta['params'][name] * 5.0, 1.0):.6g}")


def _set_feature(key: str, value: Any) -> Callable[[Meta, Recipe, Facts], None]:
    def apply(meta: Meta, recipe: Recipe, facts: Facts) -> None:
        meta["features"][key] = value

    return apply


def _feature_is(key: str, value: Any) -> Callable[[Meta], bool]:
    return lambda meta: key in meta["features"] and meta["features"][key] == value


def _text_vectors(meta: Meta, recipe: Recipe, facts: Facts) -> None:
    meta["features"]["text"] = "tfidf" if recipe.encoding == "onehot" else "svd"


def _class_weight(meta: Meta, recipe: Recipe, facts: Facts) -> None:
    if recipe.class_weight is None:  # the move applies only to recipes that have one
        return
    name, value = recipe.class_weight
    meta["params"][name] = value


def _imbalanced(facts: Facts) -> bool:
    # Binary: the rarer class is under 40% of rows. More classes: the rarest has under half
    # a fair share (sampling noise alone makes small multiclass sets look mildly uneven).
    if not facts.classification:
        return False
    return facts.minority_fraction < (0.4 if facts.n_classes <= 2 else 0.5 / facts.n_classes)


def _text_on(meta: Meta) -> bool:
    return meta["features"].get("text") in ("tfidf", "svd")


# A categorical column with at least this many levels is worth a target encoding (the script
# encodes the columns at or above it); trees split on a column with fewer levels directly.
MANY_LEVELS = 10
SEEDS = 3  # models per fold once seed_averaging is on
MANY_FOLDS = 10  # folds once more_folds is on
# Tables up to this many training rows get the more_folds move: on more, a fold's model already
# sees most of what another tenth of the rows would add, and each fold costs more.
MORE_FOLDS_ROWS = 20_000


def _target_encoding_applies(meta: Meta, recipe: Recipe, facts: Facts) -> bool:
    # Tree recipes on category codes or native categories; CatBoost already encodes its
    # categories with ordered target statistics, and a linear model's one-hot columns
    # would need the encodings rescaled.
    return (
        recipe.encoding in ("native", "ordinal")
        and facts.max_levels >= MANY_LEVELS
        and _feature_is("target_encoding", False)(meta)
    )


def _seeds(meta: Meta) -> int:
    return int(meta["run"].get("seeds") or 1)


IMPROVE_MOVES: list[Move] = [
    Move(
        "lower_lr_more_rounds",
        "smaller boosting steps, with more of them allowed, usually generalise better; early stopping still picks the count",
        _has("lr", "rounds"),
        _lower_lr,
    ),
    Move(
        "larger_trees",
        "deeper trees can express interactions the current ones cannot",
        _has("size"),
        lambda m, r, f: _resize_trees(m, r, grow=True),
    ),
    Move(
        "smaller_trees",
        "smaller trees with larger leaves overfit less on small or noisy data",
        _has("size"),
        lambda m, r, f: _resize_trees(m, r, grow=False),
    ),
    Move(
        "stronger_l2",
        "a larger L2 penalty on leaf values damps overfitting without changing the tree shapes",
        _has("l2"),
        _l2,
    ),
    Move(
        "feature_subsample",
        "each tree sees fewer columns: more diverse trees, less reliance on a few strong columns",
        lambda m, r, f: bool(_knob(r, m, "colsample")) and m["params"][r.knobs["colsample"]] > 0.35,
        lambda m, r, f: _scale(m, r.knobs["colsample"], 0.6, 0.2, 1.0),
    ),
    Move(
        "more_trees",
        "averaging more trees lowers the variance of a forest; it never hurts accuracy, only time",
        lambda m, r, f: bool(_knob(r, m, "trees")) and m["params"]["n_estimators"] < 2000,
        lambda m, r, f: _scale(m, "n_estimators", 2.0, 10, 2000, integer=True),
    ),
    Move(
        "larger_leaves",
        "larger minimum leaves smooth a forest's predictions on noisy targets",
        _has("min_leaf", "trees"),
        lambda m, r, f: _scale(m, "min_samples_leaf", 3.0, 1, 200, integer=True),
    ),
    Move(
        "weaker_penalty",
        "a weaker penalty (larger C, smaller alpha) lets the model fit more signal when it underfits",
        lambda m, r, f: bool(_knob(r, m, "C") or _knob(r, m, "alpha")),
        _penalty(stronger=False),
    ),
    Move(
        "stronger_penalty",
        "a stronger penalty (smaller C, larger alpha) keeps the model simpler when many columns are noise",
        lambda m, r, f: bool(_knob(r, m, "C") or _knob(r, m, "alpha")),
        _penalty(stronger=True),
    ),
    Move(
        "class_weight",
        "the classes are imbalanced; reweighting them inversely to their frequency makes the model attend to the rare ones",
        lambda m, r, f: _imbalanced(f) and r.class_weight is not None and r.class_weight[0] not in m["params"],
        _class_weight,
    ),
    Move(
        "freq_encoding",
        "how common a category is often predicts on its own, and orders high-cardinality columns",
        lambda m, r, f: f.has_categorical and _feature_is("freq_encoding", False)(m),
        _set_feature("freq_encoding", True),
    ),
    Move(
        "quantile_numeric",
        "a normal-quantile map stops skewed columns and outliers from dominating a linear fit",
        lambda m, r, f: r.encoding == "onehot" and f.has_numeric and _feature_is("quantile_numeric", False)(m),
        _set_feature("quantile_numeric", True),
    ),
    Move(
        "text_vectors",
        "the free-text columns enter only as lengths so far; their wording may carry signal",
        lambda m, r, f: f.has_text_columns and _feature_is("text", "stats")(m),
        _text_vectors,
    ),
    Move(
        "log_target",
        "a skewed, non-negative target is easier to fit on a log scale, where errors are relative",
        lambda m, r, f: not f.classification and (f.target_min or 0) >= 0 and _feature_is("log_target", False)(m),
        _set_feature("log_target", True),
    ),
    Move(
        "word_trigrams",
        "three-word phrases capture negation and idioms that pairs of words miss",
        lambda m, r, f: _text_on(m) and m["features"]["ngram_max"] < 3,
        _set_feature("ngram_max", 3),
    ),
    Move(
        "larger_vocabulary",
        "a larger vocabulary keeps rarer but telling n-grams",
        lambda m, r, f: _text_on(m) and m["features"]["max_features"] < 200_000,
        lambda m, r, f: m["features"].update(max_features=m["features"]["max_features"] * 2),
    ),
    Move(
        "more_svd_components",
        "more TF-IDF components keep more of the wording for the trees",
        lambda m, r, f: m["features"].get("text") == "svd" and m["features"]["svd_components"] < 256,
        lambda m, r, f: m["features"].update(svd_components=m["features"]["svd_components"] * 2),
    ),
    Move(
        "more_pca_components",
        "more principal components keep finer detail of the images",
        lambda m, r, f: 0 < m["features"].get("pca_components", 0) < 200,
        lambda m, r, f: m["features"].update(pca_components=m["features"]["pca_components"] * 2),
    ),
    Move(
        "target_encoding",
        "a many-level category's mean target is a strong, compact feature; computed inside each fold "
        "(out of fold for the fit rows), so no row's encoding has seen its own label",
        _target_encoding_applies,
        _set_feature("target_encoding", True),
    ),
    Move(
        "ratios",
        "trees cannot form the ratio of two columns (a price per area, a rate) from splits on each",
        lambda m, r, f: r.features == "columns" and f.n_numeric >= 2 and _feature_is("ratios", False)(m),
        _set_feature("ratios", True),
    ),
    Move(
        "seed_averaging",
        f"the model is stochastic (subsampled rows or columns, random initial weights): averaging {SEEDS} seeds per fold lowers "
        f"the variance of its predictions, at {SEEDS} times the training time",
        lambda m, r, f: r.stochastic and _seeds(m) < SEEDS,
        lambda m, r, f: m["run"].update(seeds=SEEDS),
    ),
    Move(
        "more_folds",
        f"on a small table each fold's model learns from {MANY_FOLDS - 1}/{MANY_FOLDS} of the rows instead of 4/5, "
        f"and the holdout and test predictions average {MANY_FOLDS} models: at about twice the training time",
        lambda m, r, f: (
            f.n_train <= MORE_FOLDS_ROWS
            and not f.time_ordered  # an expanding window's first folds would learn from fewer rows, not more
            and not _knob(r, m, "epochs")  # a network's folds cost too much to double
            and m["run"]["n_folds"] < MANY_FOLDS
        ),
        lambda m, r, f: m["run"].update(n_folds=MANY_FOLDS),
    ),
    Move(
        "more_epochs",
        "the network may still be improving; it stops early anyway when its time share is spent",
        lambda m, r, f: bool(_knob(r, m, "epochs")) and m["params"]["epochs"] < 48,
        lambda m, r, f: _scale(m, "epochs", 2.0, 1, 48, integer=True),
    ),
]
MOVES: dict[str, Move] = {m.name: m for m in IMPROVE_MOVES}


def applicable(meta: Meta, recipe: Recipe, facts: Facts) -> list[Move]:
    return [m for m in IMPROVE_MOVES if m.applies(meta, recipe, facts)]


def shrink(meta: Meta, recipe: Recipe, facts: Facts) -> None:
    """Make the run roughly half as expensive, keeping its character: fewer or cheaper
    models, fewer folds, smaller feature sets, and a cap on training rows for big data."""
    params, features, run = meta["params"], meta["features"], meta["run"]
    if _knob(recipe, meta, "rounds"):
        _scale(meta, recipe.knobs["rounds"], 0.5, 50, 20000, integer=True)
        _scale(meta, recipe.knobs["lr"], 2.0, 0.003, 0.3)  # bigger steps make up for fewer rounds
    if _knob(recipe, meta, "trees"):
        _scale(meta, "n_estimators", 0.5, 50, 2000, integer=True)
    if _knob(recipe, meta, "colsample"):
        params[recipe.knobs["colsample"]] = min(params[recipe.knobs["colsample"]], 0.5)
    if "max_iter" in params and not _knob(recipe, meta, "rounds"):
        params["max_iter"] = max(100, params["max_iter"] // 2)
    if _knob(recipe, meta, "epochs"):
        params["epochs"] = max(2, params["epochs"] // 2)
    if _seeds(meta) > 1:
        run["seeds"] = max(1, run["seeds"] // 2)
    if _text_on(meta):
        features["max_features"] = max(2000, features["max_features"] // 2)
        features["svd_components"] = max(8, features["svd_components"] // 2)
    if features.get("pca_components"):
        features["pca_components"] = max(16, features["pca_components"] // 2)
    run["n_folds"] = max(2, run["n_folds"] - 2)
    run["cv_budget_share"] = min(run["cv_budget_share"], 0.4)
    rows = run["max_train_rows"] or facts.n_train
    if rows > 2000:
        run["max_train_rows"] = max(1000, rows // 2)


def flatten(meta: Meta) -> dict[str, Any]:
    """``{"params.learning_rate": 0.05, ...}``: the tunable part of a meta, for diffs."""
    return {f"{part}.{key}": value for part in ("params", "features", "run") for key, value in meta[part].items()}


def diff(old: Meta, new: Meta) -> dict[str, list[Any]]:
    """``{"params.learning_rate": [0.05, 0.025], ...}`` for every value that changed (None = absent)."""
    a, b = flatten(old), flatten(new)
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def undo(meta: Meta, changed: dict[str, list[Any]]) -> None:
    """Put back the values a move changed (a model parameter the move added is removed again;
    features and run settings always exist, so theirs are restored, None included)."""
    for path, (before, _after) in changed.items():
        part, key = path.split(".", 1)
        section: dict[str, Any] = meta[part]  # type: ignore[literal-required]  # "params", "features" or "run"
        if before is None and part == "params":
            section.pop(key, None)
        else:
            section[key] = before
