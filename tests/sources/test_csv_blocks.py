"""A CSV handed over alone is cut into train and test rows without copying its train rows: they
are written a block at a time, the same bytes as the whole split wrote (issue 40, item 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import mlguild.util.exact_csv as exact
from mlguild.sources.csv_source import build_from_csv
from mlguild.sources.layout import split_test
from mlguild.util.exact_csv import read_csv_exact, write_csv_exact


def test_a_csv_is_cut_into_the_files_a_whole_split_writes(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame(
        {
            "code": [f"{i:05d}" for i in range(n)],
            "note": np.where(rng.random(n) < 0.1, "a, quoted one", "plain"),
            "x": rng.normal(size=n).round(3),
            "y": np.where(rng.random(n) < 0.4, "yes", "no"),
        }
    )
    source = tmp_path / "data.csv"
    frame.to_csv(source, index=False)
    whole = build_from_csv(source, tmp_path / "whole", target="y")
    monkeypatch.setattr(exact, "_WRITE_BLOCK_ROWS", 7)
    blocks = build_from_csv(source, tmp_path / "blocks", target="y")
    files = sorted(p.relative_to(whole) for p in whole.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(blocks) for p in blocks.rglob("*") if p.is_file())
    for rel in files:
        assert (whole / rel).read_bytes() == (blocks / rel).read_bytes(), rel
    # The train file holds what the whole split keeps (with the row numbers given as ids, no
    # column being one), as the whole split writes it.
    rows = read_csv_exact(source)
    rows.insert(0, "id", [str(i) for i in range(1, n + 1)])
    kept, _ = split_test(rows, 0.2, 0, "y")
    write_csv_exact(kept, tmp_path / "expected.csv")
    assert (whole / "public" / "train.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()
