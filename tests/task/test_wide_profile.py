"""A wide table's columns of numbers are profiled a block at a time (issue 25, item 10), with
exactly what the column-by-column judgement says of each."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlguild.task import profile
from mlguild.task.column_kinds import detect_kind
from mlguild.util.frames import mean_lengths


def _one_by_one(frame: pd.DataFrame, name: str) -> profile.ColumnProfile:
    series = frame[name]
    return profile.ColumnProfile(
        name=name,
        kind=detect_kind(series, name),
        dtype=str(series.dtype),
        n_unique=int(series.nunique()),
        missing_fraction=round(float(series.isna().mean()), 4),
        examples=[str(v)[:60] for v in series.dropna().head(3)],
    )


def test_the_block_profile_says_what_the_column_by_column_one_says():
    rng = np.random.default_rng(1)
    n = 60
    frame = pd.DataFrame(
        {
            "floats": rng.normal(size=n),
            "small_ints": rng.integers(0, 5, n),
            "empty": [np.nan] * n,
            "constant": [1.0] * n,
            "holes": np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 3, n)),
            "signed_zeros": [-0.0, 0.0] * (n // 2),
            "user_id": range(n),  # its name may make it an id: judged one by one
            "created": rng.integers(10**9, 2 * 10**9, n),  # may be epoch seconds: one by one
            "words": rng.choice(["x", "y"], n),
            "flags": [True, False] * (n // 2),
        }
    )
    fast = profile._plain_numeric_profiles(frame, list(frame.columns))
    assert sorted(fast) == ["constant", "empty", "floats", "holes", "signed_zeros", "small_ints"]
    for name, column in fast.items():
        assert column == _one_by_one(frame, name), name
    assert {fast[c].kind for c in fast} == {"numeric", "constant", "empty"}


def test_mean_lengths_are_those_of_pandas_column_by_column():
    frame = pd.DataFrame({"a": ["x", "yyy", None], "b": [None, None, None], "c": ["1", "22", "333"]}, dtype=object)
    lengths = mean_lengths(frame, list(frame.columns))
    assert lengths["a"] == 2.0 and lengths["c"] == 2.0 and np.isnan(lengths["b"])
