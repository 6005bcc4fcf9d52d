"""Community ideas the recipe brain can act on: a technique vocabulary from idea text to the
recipe moves and families that carry it out.

The idea pool ranks what the task's community shared (votes, author tier, public scores,
several sources) and what this run saw when it tried it; a draft, improve or evolve context
carries the best-ranked ideas as lines (``[i3fa9c1] Log-transform the target ... (post by an
expert author, 40 votes)``, best first). An idea that names a technique the recipes have
(a log target, target encoding, a model family, ...) becomes a prior on that move or family,
so it is tried early, and the node cites the idea (its meta ``ideas``), so the pool learns how
it went. An idea no recipe can act on (a custom feature, a pretrained model) is left for the
LLM brains. What the memory measured in earlier runs outweighs what the community says: an
idea adds a prior only where the memory has none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ...memory import MovePrior

# The prior an idea gives: worth one observation of a gain of half the task's score spread,
# at no change of run time. Enough to try the move (or draft the family) before the untried
# ones; one observation on this task outweighs it.
IDEA_PRIOR = MovePrior(weight=1.0, gain=0.5, log_cost=0.0)

_LINE = re.compile(r"^\[(?P<id>[A-Za-z0-9]+)\]\s*(?P<text>.*)$")
# What IdeaPool's line adds after the idea itself: its sources' signals and how it went here.
_SIGNALS = re.compile(
    r"\s\((?:post|notebook|script) by .*$|\s\(from this run's report.*$|\s\(earlier run's node .*$|; tried here:.*$"
)

# (pattern over the idea's text, the recipe move or family it names). The first patterns that
# match name what the idea asks for; several may (an idea can name a family and a move).
TECHNIQUES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), name)
    for pattern, name in (
        (r"\blog[- ]?(transform|scale|target)|\blog1p\b|\blog of the (target|price|label)", "log_target"),
        (r"\btarget[- ]encod|\bmean[- ]encod|\blikelihood encod", "target_encoding"),
        (r"\b(frequency|count)[- ]encod", "freq_encoding"),
        (r"\bratios?\b|\bper[- ](square|unit|capita|area)\b", "ratios"),
        (r"\bquantile[- ]transform|\brank[- ]?gauss|\bgauss[- ]?rank", "quantile_numeric"),
        (r"\bclass[- ]weight|\bbalanced (class|weight)|\bimbalanc", "class_weight"),
        (
            r"\b(seed[- ]averag|averag\w* (over |across )?(several |multiple |\d+ )?seeds|multiple seeds)",
            "seed_averaging",
        ),
        (r"\b(trigram|3-gram|n-?grams? (up )?to 3)", "word_trigrams"),
        (r"\b(lower|smaller) learning rate|\blearning rate of 0\.0[01]", "lower_lr_more_rounds"),
        (r"\b(deeper trees|more leaves|larger num_leaves|max[_ ]depth of \d{2})", "larger_trees"),
        (r"\b(feature|column) (sub)?sampl|\bcolsample|\bfeature_fraction", "feature_subsample"),
        (r"\b(l2|lambda|ridge) regulari[sz]|\bstronger regulari[sz]", "stronger_l2"),
        (r"\bcat[- ]?boost", "catboost"),
        (r"\bxgboost|\bxgb\b", "xgboost"),
        (r"\blight[- ]?gbm|\blgbm", "lightgbm"),
        (r"\brandom[- ]forest", "random_forest"),
        (r"\bhist(ogram)?[- ]?gradient[- ]?boost", "hist_gb"),
        (r"\blogistic regression|\bridge regression|\blinear model", "linear"),
        (r"\bsvm\b|\bsupport vector", "tfidf_svm"),
        (r"\blambda[- ]?rank", "lambdarank"),
        (r"\brank:ndcg|\bxgboost ranker", "xgb_rank"),
    )
)


def named_techniques(text: str) -> list[str]:
    """The recipe moves and families an idea's text names, in the vocabulary's order."""
    return [name for pattern, name in TECHNIQUES if pattern.search(text)]


def idea_hints(ideas: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Per move or family name, the best-ranked idea that names it: (idea id, idea text).
    ``ideas`` are the context's idea lines, best first."""
    hints: dict[str, tuple[str, str]] = {}
    for line in ideas:
        found = _LINE.match(line.strip())
        if found is None:
            continue
        text = _SIGNALS.sub("", found["text"])
        for name in named_techniques(text):
            hints.setdefault(name, (found["id"], text))
    return hints


def with_ideas(priors: Mapping[str, MovePrior], hints: Mapping[str, tuple[str, str]]) -> dict[str, MovePrior]:
    """``priors`` with an idea's prior for each hinted name the memory has no prior for."""
    return {**{name: IDEA_PRIOR for name in hints}, **priors}


def cited(names: list[str], hints: Mapping[str, tuple[str, str]], priors: Mapping[str, MovePrior]) -> list[str]:
    """The ids of the ideas behind ``names`` where the idea's prior is what counted (the
    memory had none), once each in order."""
    return list(dict.fromkeys(hints[n][0] for n in names if n in hints and n not in priors))
