"""The recipe families with script templates of their own: grouped ranking (a score per
(group, item) row; templates/rank.py.j2), ranked lists (a list of items per query row;
templates/lists.py.j2) and free-text phrases taken from a text column (templates/spans.py.j2),
each in draft order. mlguild.brains.recipes.catalog adds them to the catalogue."""

from __future__ import annotations

from .recipe import GBDT_KNOBS, XGB_KNOBS, Recipe, lightgbm_defaults, xgboost_defaults

# ---- grouped ranking (a score per (group, item) row; templates/rank.py.j2), in draft order
RANKING_RECIPES = [
    Recipe(
        "lambdarank",
        "grouped_ranking",
        "LightGBM LambdaRank within groups",
        "LambdaRank optimises nDCG within each group directly: the usual strongest learner-to-rank",
        "lambdarank",
        "columns",
        "native",
        lightgbm_defaults(500, 0.05, 15, 0.8, 50),
        GBDT_KNOBS,
        stochastic=True,
    ),
    Recipe(
        "xgb_rank",
        "grouped_ranking",
        "XGBoost rank:ndcg within groups",
        "LambdaMART on depth-wise trees: a second ranker whose errors differ from LightGBM's",
        "xgb_rank",
        "columns",
        "native",
        xgboost_defaults(500, 4, 50),
        XGB_KNOBS,
        stochastic=True,
    ),
    Recipe(
        "pointwise",
        "grouped_ranking",
        "Pointwise LightGBM (each row's relevance on its own)",
        "a pointwise classifier is robust on small groups and ranks by a calibrated relevance",
        "pointwise",
        "columns",
        "native",
        lightgbm_defaults(1000, 0.05, 15, 0.8, 50),
        GBDT_KNOBS,
        stochastic=True,
    ),
]
# ---- ranked lists (a list of items per query row; templates/lists.py.j2)
LIST_RECIPES = [
    Recipe(
        "candidates_lgbm",
        "ranked_lists",
        "Popularity, association and co-occurrence candidates re-ranked by LightGBM",
        "a candidate generator with a learned re-ranker is how recommendation competitions are won",
        "lists_lightgbm",
        "lists",
        "none",
        lambda c: dict(
            n_estimators=300,
            learning_rate=0.05,
            num_leaves=15,
            min_child_samples=20,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            reg_lambda=1.0,
        ),
        {k: v for k, v in GBDT_KNOBS.items() if k != "rounds"},
    ),
    Recipe(
        "candidates_mix",
        "ranked_lists",
        "Popularity, association and co-occurrence candidates in a fixed mix",
        "a fixed mix of the candidate scores needs no training: a strong, fast baseline",
        "lists_mix",
        "lists",
        "none",
        lambda c: dict(popularity=1.0, association=2.0, cooccurrence=0.5),
    ),
]
# ---- a phrase of the row's own text (a free-text metric such as jaccard_words; templates/spans.py.j2)
SPAN_RECIPES = [
    Recipe(
        "span_lightgbm",
        "text_spans",
        "Words of the source text scored by LightGBM, the phrase from the first to the last chosen",
        "the phrase is a run of the row's own words: scoring each word by its place, shape and how often "
        "it lay inside training phrases picks the run out",
        "span_lightgbm",
        "spans",
        "none",
        lambda c: dict(
            n_estimators=300,
            learning_rate=0.05,
            num_leaves=31,
            min_child_samples=20,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            reg_lambda=1.0,
        ),
        GBDT_KNOBS,
    ),
    Recipe(
        "copy_source",
        "text_spans",
        "The whole source text as the phrase",
        "the phrase lies inside the row's own text: the whole text is the floor any extractor must beat",
        "copy_source",
        "spans",
        "none",
        lambda c: {},
    ),
]
