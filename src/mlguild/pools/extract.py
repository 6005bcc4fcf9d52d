"""Atomic ideas out of the community corpus (mlguild.task.knowledge), by an LLM or by rules.

With an LLM, each item is read once and the model lists the ideas it contains as JSON (a
reply that is not valid JSON, or is cut off, loses that item's ideas, never the run). With
no LLM, the rules keep the sentences, bullets and code comments that name a modelling
technique (a model family, a feature or target transform, a validation or ensembling scheme)
and are short enough to be one idea. Which items were read is kept in the pool, so a resume,
or a second worker, does not read them again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ..task.knowledge import Item
from .ideas import COMMUNITY, IdeaPool, Source

MAX_IDEAS_PER_ITEM = 6
_MAX_ITEM_CHARS = 12_000  # of an item's text an LLM reads: the start says what it is about
_MAX_WORDS = 30  # a longer sentence is an explanation, not an idea
_MIN_WORDS = 3
# Words that make a sentence about how to model, not about the competition or the weather.
_TECHNIQUE = re.compile(
    r"\b(lightgbm|lgbm|xgboost|catboost|random forest|extra ?trees|logistic|ridge|lasso|elastic ?net|svm|knn|"
    r"neural|mlp|cnn|transformer|bert|tf-?idf|n-?grams?|embedding|target encod\w*|one-?hot|frequency encod\w*|"
    r"log1p|log[- ]transform\w*|box-?cox|scal\w+|normali[sz]\w*|impute\w*|missing values?|outliers?|"
    r"feature\w*|interaction\w*|aggregat\w*|lag|rolling|k-?fold|stratif\w*|group ?k-?fold|cross-?validat\w*|"
    r"folds?|early stopping|learning rate|hyper-?parameter\w*|optuna|tun\w+|ensembl\w*|stack\w*|blend\w*|averag\w*|"
    r"seed\w*|augment\w*|pseudo-?label\w*|threshold|class weights?|oversampl\w*|undersampl\w*|smote|"
    r"leak\w*|drop|clip\w*|round\w*|pca|svd|cluster\w*)\b",
    re.IGNORECASE,
)
_EMPHASIS = re.compile(r"`|\*\*?|(?<!\w)__?|__?(?!\w)")  # Markdown marks, not a name's underscores
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_COMMENT = re.compile(r"^\s*#\s?(.*)$", re.MULTILINE)
# A model built in code, e.g. lgb.LGBMClassifier(n_estimators=300): what a notebook really fits.
_MODEL_CALL = re.compile(
    r"\b([A-Z]\w*(?:Classifier|Regressor|Regression|Ridge|Lasso|ElasticNet|Ranker|SVC|SVR))\(([^()\n]{0,120})\)"
)


def rule_ideas(item: Item) -> list[str]:
    """The item's sentences (prose, bullets, code comments) that read as one modelling idea,
    and the models its code builds with their settings."""
    code = "\n".join(_FENCE.findall(item.text)) if item.kind != "script" else item.text
    prose = _FENCE.sub(" ", item.text) if item.kind != "script" else ""
    candidates: list[str] = []
    for line in prose.splitlines():
        line = line.strip().lstrip("#>*-• ").strip()
        candidates += _SENTENCE.split(line) if line else []
    candidates += [c.strip() for c in _COMMENT.findall(code)]
    found: list[str] = []
    for model, args in _MODEL_CALL.findall(code):  # a model call is a technique by itself
        args = " ".join(args.split())
        found.append(f"train {model} with {args}" if args else f"train a {model} model")
    for text in candidates:
        text = _EMPHASIS.sub("", text).strip(" :;,")
        words = text.split()
        if not (_MIN_WORDS <= len(words) <= _MAX_WORDS) or not _TECHNIQUE.search(text):
            continue
        found.append(text)
    return list(dict.fromkeys(found))[:MAX_IDEAS_PER_ITEM]


def parse_ideas(reply: str) -> list[str]:
    """The ideas an LLM's reply lists; [] when it cannot be read (not JSON, cut off)."""
    match = re.search(r"\[.*\]", reply, re.DOTALL)
    if match is None:
        return []
    try:
        listed = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    ideas = []
    for entry in listed if isinstance(listed, list) else []:
        text = entry.get("idea") if isinstance(entry, dict) else entry
        if isinstance(text, str) and _MIN_WORDS <= len(text.split()) <= 2 * _MAX_WORDS:
            ideas.append(" ".join(text.split()))
    return ideas[:MAX_IDEAS_PER_ITEM]


def source_of(item: Item) -> Source:
    return Source(item.id, item.title, item.kind, item.author_tier, item.votes, item.public_score, item.date)


def fill_from_corpus(
    pool: IdeaPool,
    items: list[Item],
    read: Callable[[Item], list[str]],
) -> tuple[int, int]:
    """Read every item the pool has not read yet with ``read`` and keep its ideas;
    (items read, ideas added or joined)."""
    done = set(pool.store.keys("extracted"))
    items_read = ideas = 0
    for item in items:
        if item.id in done:
            continue
        for text in read(item):
            try:
                pool.add(text, COMMUNITY, source_of(item))
            except ValueError:  # a line of stop words only
                continue
            ideas += 1
        pool.store.put("extracted", item.id, json.dumps({"title": item.title}))
        items_read += 1
    return items_read, ideas


def item_excerpt(item: Item) -> str:
    """What of an item an LLM reads: the start, which says what it is about."""
    return item.text[:_MAX_ITEM_CHARS]
