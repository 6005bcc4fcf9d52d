"""A CSV handed over as ``csv:PATH`` becomes a task folder a block at a time (issue 40, item 1):
the same bytes whether it is read in one block or many, by Arrow or by pandas, and never held
whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import mlguild.util.exact_csv as exact
from mlguild.core.errors import TaskError
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
    monkeypatch.setattr(exact, "_BLOCK_BYTES", 1024)
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


def _same_folders(one, other):
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file())
    for rel in files:
        assert (one / rel).read_bytes() == (other / rel).read_bytes(), rel


def test_a_train_and_a_test_file_read_in_blocks_number_their_rows_across_both(tmp_path, monkeypatch):
    # Rows with an empty target are dropped, the rest numbered from 1 and the test rows on from
    # there; a row with a missing field (its target: read as empty) makes Arrow refuse the file
    # part way, and pandas reads it again from the start, in blocks of its own.
    rng = np.random.default_rng(1)
    n = 240
    frame = pd.DataFrame(
        {"x": rng.normal(size=n).round(3), "k": rng.integers(0, 3, n), "y": np.where(rng.random(n) < 0.5, "a", "b")}
    )
    frame.loc[::11, "y"] = ""
    lines = frame.to_csv(index=False).splitlines()
    lines[200] = lines[200].rsplit(",", 1)[0]  # no "y": a missing field
    source = tmp_path / "train.csv"
    source.write_text("\n".join(lines) + "\n")
    test = tmp_path / "test.csv"
    pd.DataFrame({"x": rng.normal(size=30).round(3), "k": rng.integers(0, 3, 30)}).to_csv(test, index=False)
    whole = build_from_csv(source, tmp_path / "whole", target="y", test=test)
    monkeypatch.setattr(exact, "_BLOCK_BYTES", 256)
    monkeypatch.setattr(exact, "_PANDAS_BLOCK_ROWS", 17)
    blocks = build_from_csv(source, tmp_path / "blocks", target="y", test=test)
    _same_folders(whole, blocks)
    train = read_csv_exact(blocks / "public" / "train.csv")
    labelled = n - len(range(0, n, 11)) - 1
    assert train["id"].tolist() == [str(i) for i in range(1, labelled + 1)]
    assert read_csv_exact(blocks / "public" / "test.csv")["id"].tolist() == [
        str(i) for i in range(labelled + 1, labelled + 31)
    ]


def test_a_long_csv_becomes_a_task_folder_without_being_held_whole(tmp_path):
    # Arrow's memory pool says the most it held at once: building the task folder must take a
    # fraction of what reading the file whole takes (the file of 200,000 rows is read in 64 kB
    # blocks; the columns kept whole are the target's).
    script = textwrap.dedent(
        f"""
        import numpy as np, pandas as pd, pyarrow as pa
        from pathlib import Path
        import mlguild.util.exact_csv as exact
        from mlguild.sources.csv_source import build_from_csv
        exact._BLOCK_BYTES = 1 << 16
        folder = Path({str(tmp_path)!r})
        rng = np.random.default_rng(0)
        n = 200_000
        frame = pd.DataFrame(rng.normal(size=(n, 10)).round(4), columns=[f"x{{i}}" for i in range(10)])
        frame["y"] = np.where(rng.random(n) < 0.3, "yes", "no")
        frame.to_csv(folder / "big.csv", index=False)
        del frame
        pool = pa.default_memory_pool()
        build_from_csv(folder / "big.csv", folder / "task", target="y")
        built = pool.max_memory()
        exact.read_csv_exact(folder / "big.csv")
        print(built, pool.max_memory())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    built, whole = (int(v) for v in done.stdout.split())
    assert 0 < built < whole / 3, (built, whole)
    assert len(read_csv_exact(tmp_path / "task" / "public" / "train.csv")) == 160_000


def test_a_test_file_that_cannot_be_used_is_refused_before_anything_is_written(tmp_path):
    train = tmp_path / "train.csv"
    pd.DataFrame({"row_id": ["a", "b", "c", "d"], "x": [1, 2, 3, 4], "y": [0, 1, 0, 1]}).to_csv(train, index=False)
    no_ids = tmp_path / "no_ids.csv"
    pd.DataFrame({"x": [5, 6], "z": [1, 2]}).to_csv(no_ids, index=False)
    empty = tmp_path / "empty.csv"
    empty.write_text("row_id,x\n")
    for test, message, fix in [
        (no_ids, "has no id column 'row_id'", "or pass --id"),
        (empty, "has no data rows", "a header and data rows"),
    ]:
        with pytest.raises(TaskError) as caught:
            build_from_csv(train, tmp_path / "task", target="y", test=test)
        assert message in str(caught.value) and fix in caught.value.fix
        assert not (tmp_path / "task").exists()
