"""The run's embeddings cache keeps what a node's script computed from input files: a plain
.npy file of a 2-d array of numbers, the first of its name only. A pickled object, a file cut
short, a link or a second file of a name already kept is left out."""

from __future__ import annotations

import numpy as np

from mlguild.run.embeddings_cache import keep_embeddings


def test_only_plain_numeric_matrices_not_yet_kept_enter_the_cache(tmp_path):
    produced, cache = tmp_path / "output" / "embeddings", tmp_path / "cache"
    produced.mkdir(parents=True)
    np.save(produced / "good.npy", np.ones((4, 3), dtype=np.float32))
    np.save(produced / "v2.npy", np.ones((2, 2), dtype=np.int64))
    np.save(produced / "objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    np.save(produced / "vector.npy", np.ones(5))
    np.save(produced / "short.npy", np.ones((100, 8)))
    (produced / "short.npy").write_bytes((produced / "short.npy").read_bytes()[:-64])
    (produced / "garbage.npy").write_bytes(b"not a numpy file at all")
    (produced / "link.npy").symlink_to(produced / "good.npy")

    keep_embeddings(produced, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["good.npy", "v2.npy"]
    np.testing.assert_array_equal(np.load(cache / "good.npy"), np.ones((4, 3)))

    np.save(produced / "good.npy", np.zeros((4, 3), dtype=np.float32))
    keep_embeddings(produced, cache)  # a later node cannot replace what the first one kept
    np.testing.assert_array_equal(np.load(cache / "good.npy"), np.ones((4, 3)))


def test_a_node_that_wrote_no_embeddings_leaves_the_cache_alone(tmp_path):
    keep_embeddings(tmp_path / "output" / "embeddings", tmp_path / "cache")
    assert not (tmp_path / "cache").exists()
