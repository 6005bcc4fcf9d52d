"""The recipes of a free-text target (a word-level Jaccard score: tweet-sentiment-extraction,
chaii): the phrase is a run of words of one of the row's own text columns. The whole text is
the floor; the LightGBM word scorer must beat it, learning which words (beside the row's
category) lie inside the phrases."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import Workspace
from conftest import draft_of as _draft

from mlguild.brains.recipes.catalog import DRAFT_ORDER, FALLBACK, recipe_modality
from mlguild.brains.recipes.fuse import fuse_proposal
from mlguild.core.errors import MoveUnavailable
from mlguild.core.protocols import ParentView
from mlguild.metrics import get_metric
from mlguild.run.references import reference_proposal

GOOD, BAD = ["great", "lovely", "happy", "fun"], ["awful", "sad", "broken", "late"]
FILLER = "the a day bus we it so then went home today and with my".split()


def _tweets(rows: int) -> pd.DataFrame:
    """Texts of filler words around one telling word; the phrase is the telling word and the word
    after it for a positive or negative row, the whole text for a neutral one."""
    rng = np.random.default_rng(0)
    records = []
    for i in range(rows):
        mood = rng.choice(["positive", "negative", "neutral"])
        words = list(rng.choice(FILLER, size=rng.integers(6, 14)))
        at = int(rng.integers(0, len(words) - 1))
        if mood != "neutral":
            words[at] = rng.choice(GOOD if mood == "positive" else BAD)
        text = " ".join(words)
        phrase = text if mood == "neutral" else " ".join(words[at : at + 2])
        records.append({"textID": f"t{i:05d}", "text": text, "sentiment": mood, "selected_text": phrase})
    return pd.DataFrame(records)


@pytest.fixture(scope="module")
def tweets(tmp_path_factory):
    return Workspace(
        tmp_path_factory.mktemp("tweets"),
        _tweets(500),
        train_only=(),
        name="tweets",
        task_type="multiclass",
        metric="jaccard_words",
        id_column="textID",
        target_columns=["selected_text"],
        submission_columns=["textID", "selected_text"],
    )


def _cv(stdout: str) -> float:
    return float(re.search(r"cv_score: (\S+)", stdout).group(1))


def test_a_free_text_task_has_its_own_recipes_and_no_blend(tweets):
    assert recipe_modality(tweets.task) == "text_spans"
    assert DRAFT_ORDER["text_spans"] == ["span_lightgbm", "copy_source"] and FALLBACK["text_spans"] == "copy_source"
    assert reference_proposal("lightgbm", tweets.task, tweets.profile).meta["recipe"] == "span_lightgbm"
    with pytest.raises(MoveUnavailable, match="no regularised linear model for a text_spans task"):
        reference_proposal("linear", tweets.task, tweets.profile)
    draft = _draft(tweets, "copy_source")
    parents = [ParentView(f"n{i}", "draft", draft.plan, draft.code, "scored", 0.5, meta=draft.meta) for i in (1, 2)]
    with pytest.raises(MoveUnavailable, match="phrases of text"):
        fuse_proposal(tweets.context(parents=parents))


@pytest.mark.slow
def test_the_word_scorer_beats_the_whole_text_and_writes_phrases_of_each_rows_own_words(tweets):
    floor = tweets.run(_draft(tweets, "copy_source").code, "copy")
    learned = tweets.run(_draft(tweets, "span_lightgbm").code, "span")
    assert "source column 'text'" in learned.stdout and "threshold " in learned.stdout
    assert _cv(learned.stdout) > _cv(floor.stdout) + 0.2  # the whole text scores about 0.45 here
    out = tweets.root / "nodes" / "span" / "output"
    test = pd.read_csv(tweets.data / "test.csv", dtype=str, keep_default_na=False).set_index("textID")
    answers = _tweets(500).set_index("textID")
    written = pd.read_csv(out / "submission.csv", dtype=str, keep_default_na=False)
    for textid, phrase in zip(written["textID"], written["selected_text"], strict=True):
        assert phrase in test.loc[textid, "text"]  # a run of the row's own words, in order
    jaccard = get_metric("jaccard_words")
    score = jaccard(answers.loc[written["textID"], "selected_text"].tolist(), written["selected_text"].tolist())
    assert score > 0.8  # on the test rows it never saw


@pytest.mark.slow
def test_a_question_beside_its_context_tells_the_scorer_which_words(tmp_path):
    """chaii's layout: the answer is the run of the context that the question names. Every
    context holds three names, any of which may be asked for: only whether a word is among the
    question's words tells them apart."""
    rng = np.random.default_rng(1)
    names = ["delhi", "chennai", "mumbai", "kolkata", "pune", "agra"]
    records = []
    for i in range(400):
        picked = list(rng.choice(names, size=3, replace=False))
        words = []
        for name in picked:
            words += [name, "city", *rng.choice(FILLER, size=3)]
        asked = picked[int(rng.integers(0, 3))]
        context = " ".join(words)
        records.append(
            {
                "id": f"q{i:04d}",
                "context": context,
                "question": " ".join(["where", *rng.choice(FILLER, size=4), "is", asked]),  # many distinct ones
                "answer_text": f"{asked} city",
            }
        )
    ws = Workspace(
        tmp_path / "qa", pd.DataFrame(records), name="qa", task_type="multiclass", metric="jaccard_words",
        id_column="id", target_columns=["answer_text"], submission_columns=["id", "answer_text"],
    )  # fmt: skip
    done = ws.run(_draft(ws, "span_lightgbm").code, "span")
    assert "source column 'context'" in done.stdout and "other texts ['question']" in done.stdout
    assert _cv(done.stdout) > 0.9  # the name asked for, and the word after it
