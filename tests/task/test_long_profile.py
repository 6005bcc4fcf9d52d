"""A long train file's columns are profiled on a seeded sample of its rows (issue 40, item 1):
its row count and its target are the whole file's, and the profile says it was sampled."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlguild.task import profile


def _workspace(tmp_path, n):
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    y = np.where(np.arange(n) == n - 1, "rare", np.where(rng.random(n) < 0.3, "yes", "no"))
    frame = pd.DataFrame({"id": [f"r{i:06d}" for i in range(n)], "x": rng.normal(size=n).round(4), "y": y})
    frame.to_csv(data / "train.csv", index=False)
    frame.head(50).drop(columns=["y"]).to_csv(data / "test.csv", index=False)
    frame.head(20).drop(columns=["y"]).to_csv(data / "holdout.csv", index=False)
    spec = {
        "train_file": "train.csv",
        "test_file": "test.csv",
        "id_column": "id",
        "target_columns": ["y"],
        "task_type": "multiclass",
    }
    return data, spec


def test_a_long_train_file_is_profiled_on_a_sample_with_its_whole_count_and_target(tmp_path, monkeypatch):
    data, spec = _workspace(tmp_path, 6_000)
    whole = profile.profile_workspace(data, spec)
    assert whole.profiled_rows is None and whole.n_train == 6_000

    monkeypatch.setattr(profile, "_SAMPLE_ABOVE_BYTES", 1_000)
    monkeypatch.setattr(profile, "_PROFILE_ROWS", 600)
    sampled = profile.profile_workspace(data, spec)
    assert sampled.n_train == 6_000 and sampled.n_test == 50 and sampled.n_holdout == 20
    assert sampled.profiled_rows is not None and 300 <= sampled.profiled_rows <= 1_200
    # The target is read whole: the one "rare" row, far too rare for the sample, is a class.
    assert sampled.target["classes"] == whole.target["classes"] and sampled.target["n_classes"] == 3
    x = next(c for c in sampled.columns if c.name == "x")
    assert x.kind == "numeric" and x.dtype == "float64" and x.n_unique <= sampled.profiled_rows
    assert "random sample of" in profile.summary_text(sampled)
    assert profile.DataProfile.from_dict(sampled.to_dict()).profiled_rows == sampled.profiled_rows
