"""The keys of a node's meta that the harness reads: what a brain said about its proposal, and
what the harness adds to it. Journaled with the node (``node_started``) as plain JSON, so every
key is optional: a brain sets those it knows, and a record from an older run may lack any.

A recipe node's meta extends this one (mlguild.brains.recipes.recipe.RecipeMeta) with what its
script was rendered from.
"""

from __future__ import annotations

from typing import Any, TypedDict


class NodeMeta(TypedDict, total=False):
    # What made it, in words (every brain).
    brain: str  # "recipes", or none for an LLM's
    summary: str  # one line of what it does
    model: str  # the LLM that wrote it
    recipe: str  # a recipe family (mlguild.brains.recipes.catalog): what the views and the memory name it by
    family: str  # a model family named by a non-recipe brain
    move: str | None  # the change that made it from its parent ("a+b" for several)
    parent: str | None  # the parent node's id, as the brain saw it
    changed: dict[str, list[Any]]  # flattened setting -> [before, after]
    params: dict[str, Any]  # a recipe node's model parameters (the memory keeps its configuration)
    features: dict[str, Any]  # its feature switches and sizes
    run: dict[str, Any]  # its n_folds, max_train_rows, cv_budget_share, seeds
    novel: list[str]  # the components of a cycle draft that no community code had (mlguild.pools.novelty)
    # The community's ideas (mlguild.pools.ideas): those it acts on, those it was offered.
    ideas: list[str]
    ideas_offered: list[str]
    plan_recall: dict[str, Any]  # the memory's records shown with its plan (mlguild.brains.llm.planner)
    review: dict[str, Any]  # the LLM's review of its script before it ran (mlguild.brains.llm.review)
    repaired_by: str  # the node whose repair of this recipe script was carried over (mlguild.brains.repair_port)
    last_resort: bool  # the safest pipeline, after repeated identical failures (core.protocols.LAST_RESORT)
    reference: str  # the baseline ladder's rung it is (mlguild.run.references)
    fuse: list[str]  # a blend's members (mlguild.brains.recipes.fuse)
    # The community cycle (mlguild.run.fix_loop): its refine loop's steps and how the loop ended.
    cycle: str
    steps: int
    final_step: int
    refine_stopped: str
    # A re-run's and a refit's: the seed it ran with, the node it refits, the parents' refits
    # whose outputs it stages (mlguild.final.stage).
    seed: int
    rerun_of: str
    refit_of: str
    data: str  # what a refit ran on, in words
    refit_growth: float  # how many times the search's training rows a refit trained on (fewer when time was short)
    one_model: (
        bool  # a refit of a script by itself as one model on every row (MLGUILD_REFIT; mlguild.run.refit.one_model)
    )
    fold_share: float  # of a refit's time limit its folds may use (MLGUILD_FOLD_SHARE; mlguild.run.refit.fold_share)
    # A row sample's (mlguild.run.samples): the training rows its script read, of how many, and
    # the node whose script a grow ran again on more of them.
    train_rows: int
    train_rows_of: int
    grown_from: str
    stage: dict[str, str]
