"""What a recipe is: a family's fixed choices (model, features, encoding, defaults, the
knobs its moves turn), and the meta a recipe node's script is rendered from. The families
themselves are in mlguild.brains.recipes.catalog.

A recipe *meta* is everything a script depends on, as plain JSON::

    {"brain": "recipes", "recipe": "lightgbm", "modality": "tabular",
     "params":   {...},   # passed verbatim to the model constructor (PARAMS in the script)
     "features": {...},   # feature switches and sizes (see the feature templates)
     "run":      {...},   # n_folds, max_train_rows, cv_budget_share, seeds
     "moves": [...], "move": None, "parent": None}

so that an improve step can mutate it and re-render, and a person can see exactly what
differs between two nodes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ...core.meta import NodeMeta
from ...sandbox import devices
from ...sandbox.backbones import find_backbones

Params = dict[str, Any]


class RecipeMeta(NodeMeta, total=False):
    """The shape of a recipe node's meta (see the module docstring): what its script was
    rendered from, and how it came from its parent. The keys the harness reads too (``brain``
    "recipes", ``recipe`` a family of RECIPES, ``params`` passed verbatim to the model
    constructor, ``features``, ``run``, ``move``, ``parent``, ``changed``, ``ideas``,
    ``reference``, ``last_resort``) are NodeMeta's."""

    modality: str
    moves: list[str]  # every move from the draft to this node, oldest first
    evolved_from: str  # an evolve's parent
    repairs: list[str]  # repairs learned on this task, applied to the draft
    recalled: str  # "RUN/NODE": an earlier run's node on this task made again (mlguild.brains.recipes.earlier)
    tune: dict[str, Any]  # a tune probe's direction, step and its source (mlguild.brains.recipes.tuning)


def recipe_meta(meta: Mapping[str, Any]) -> RecipeMeta:
    """A node's meta as the recipe meta it is (read back from a proposal or the journal, where
    it is plain JSON); the caller has checked that a recipe wrote it."""
    return cast(RecipeMeta, dict(meta))


@dataclass(frozen=True)
class Recipe:
    name: str
    modality: str  # tabular | text | image_array
    title: str  # one line, for plans and the script's docstring
    why: str  # why this family deserves a draft
    model: str  # template under templates/models/
    features: str  # template under templates/features/
    encoding: str  # columns: native | ordinal | catboost | onehot (pixels: none)
    defaults: Callable[[bool], Params]  # model parameters, given "is classification"
    knobs: dict[str, str] = field(default_factory=dict)  # role (rounds, lr, size, ...) -> parameter name
    class_weight: tuple[str, Any] | None = None  # parameter that reweights classes, and its value
    estimators: tuple[str, str] = ("", "")  # (classifier, regressor) class names for forests
    stochastic: bool = False  # fits differ by seed (row/column subsampling): seed averaging helps
    needs: str | None = None  # a module the script imports that the [ml] extra does not install
    backbone: str | None = None  # pretrained weights the script loads (sandbox/backbones)
    gpu: bool = False  # offered only where a GPU is there (sandbox/devices)

    def estimator(self, classification: bool) -> str:
        return self.estimators[0] if classification else self.estimators[1]

    def available(self) -> bool:
        """Whether the script can run here: scripts run with this interpreter, so a module
        this environment lacks, or weights it cannot find, would only crash them."""
        if self.needs is not None and importlib.util.find_spec(self.needs) is None:
            return False
        if self.backbone is not None and self.backbone not in find_backbones():
            return False
        return not self.gpu or bool(devices.discover())


def lightgbm_defaults(
    rounds: int, lr: float, leaves: int, colsample: float, patience: int, **extra: Any
) -> Callable[[bool], Params]:
    """LightGBM defaults; tabular, text and pixel recipes differ only in these few values."""

    def defaults(classification: bool) -> Params:
        return dict(
            n_estimators=rounds,
            learning_rate=lr,
            num_leaves=leaves,
            min_child_samples=20,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=colsample,
            reg_lambda=1.0,
            early_stopping_rounds=patience,
            **extra,
        )

    return defaults


GBDT_KNOBS = dict(
    rounds="n_estimators",
    lr="learning_rate",
    size="num_leaves",
    l2="reg_lambda",
    colsample="colsample_bytree",
    min_leaf="min_child_samples",
)


def xgboost_defaults(rounds: int, depth: int, patience: int) -> Callable[[bool], Params]:
    """XGBoost defaults (histogram method); the tabular and ranking recipes differ only in these."""

    def defaults(classification: bool) -> Params:
        return dict(
            n_estimators=rounds,
            learning_rate=0.05,
            max_depth=depth,
            min_child_weight=1.0,
            subsample=0.8,
            colsample_bytree=0.8,
            reg_lambda=1.0,
            early_stopping_rounds=patience,
        )

    return defaults


XGB_KNOBS = dict(
    rounds="n_estimators",
    lr="learning_rate",
    size="max_depth",
    l2="reg_lambda",
    colsample="colsample_bytree",
    min_leaf="min_child_weight",
)
