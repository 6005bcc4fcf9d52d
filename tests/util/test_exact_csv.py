"""util/exact_csv: Arrow reads and writes what pandas would, exactly, whole or a block at a time."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import mlguild.util.exact_csv as exact
from mlguild.core.errors import TaskError
from mlguild.util.exact_csv import count_rows, read_csv_exact, rows_where, sample_rows, write_csv_exact, write_rows

TRICKY = '\ufeffid,text,value\n001,"a, b",NA\n002,,1.50\n003,"line\nbreak","say ""hi"""\n004,é,-0\n'


def pandas_read(path, **kwargs):
    return pd.read_csv(path, dtype=str, keep_default_na=False, index_col=False, **kwargs)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows, so that every file here is read in many of them."""
    monkeypatch.setattr(exact, "_BLOCK_BYTES", 64)
    monkeypatch.setattr(exact, "_PANDAS_BLOCK_ROWS", 2)


def test_arrow_reads_the_exact_strings_pandas_reads(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TRICKY, encoding="utf-8")
    got = read_csv_exact(path)
    assert str(got.dtypes.iloc[0]) == "string"  # Arrow strings, not a Python object per cell
    assert got.to_dict("list") == pandas_read(path).to_dict("list")
    assert got["id"].tolist() == ["001", "002", "003", "004"] and got["value"].tolist()[0] == "NA"
    assert read_csv_exact(path, usecols=["value", "id"]).columns.tolist() == ["id", "value"]


@pytest.mark.parametrize(
    "text",
    [
        "id,x\n1,2\n3\n4,5\n",  # a row with a missing field: pandas fills it
        "id,x,x\n1,2,3\n",  # a repeated name: pandas renames it
        "id,\n1,2\n",  # an unnamed column
    ],
)
def test_what_arrow_refuses_or_names_differently_is_read_by_pandas(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert read_csv_exact(path).to_dict("list") == pandas_read(path).to_dict("list")


def test_an_unreadable_file_is_one_line_and_its_fix(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"")
    with pytest.raises(TaskError, match="cannot read"):
        read_csv_exact(path)


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"id": ["001", "002"], "x": ["NA", ""]}),  # plain text: Arrow writes it
        pd.DataFrame({"id": ["1", "2"], "x": ["a,b", 'say "hi"']}),  # quoting: pandas writes it
        pd.DataFrame({"x": ["", "a"]}),  # one column: an empty value must not be a blank line
        pd.DataFrame({"id": ["1", "2"], "x": [1.5, 2.0]}),  # numbers: pandas' formatting
    ],
)
def test_write_csv_exact_writes_the_bytes_pandas_writes(tmp_path, frame):
    expected = io.StringIO()
    frame.to_csv(expected, index=False)
    write_csv_exact(frame, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text() == expected.getvalue()
    arrow = frame.astype(pd.StringDtype("pyarrow")) if frame.dtypes.eq(object).all() else frame
    write_csv_exact(arrow, tmp_path / "arrow.csv")
    assert (tmp_path / "arrow.csv").read_text() == expected.getvalue()


@pytest.mark.parametrize("text", [TRICKY, "id,x\n1,2\n3\n4,5\n5,6\n"])  # the second: Arrow refuses, pandas reads
def test_write_rows_a_block_at_a_time_is_the_whole_file_split(tmp_path, small_blocks, text):
    source = tmp_path / "t.csv"
    source.write_text(text, encoding="utf-8")
    whole = pandas_read(source)
    keep = np.arange(len(whole)) % 2 == 0
    taken = write_rows(source, keep, tmp_path / "kept.csv", take=~keep)
    write_csv_exact(whole[keep], tmp_path / "expected.csv")
    assert (tmp_path / "kept.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()
    assert taken.to_dict("list") == whole[~keep].reset_index(drop=True).to_dict("list")
    write_rows(source, np.zeros(len(whole), dtype=bool), tmp_path / "none.csv")
    assert pandas_read(tmp_path / "none.csv").columns.tolist() == whole.columns.tolist()


def test_write_rows_refuses_a_mask_of_another_length(tmp_path):
    source = tmp_path / "t.csv"
    source.write_text("id,x\n1,2\n3,4\n")
    with pytest.raises(TaskError, match="changed while it was read"):
        write_rows(source, np.ones(3, dtype=bool), tmp_path / "out.csv")


def test_rows_where_keeps_every_row_of_the_values_asked_for(tmp_path, small_blocks):
    source = tmp_path / "t.csv"
    pd.DataFrame({"id": [f"{i % 7:03d}" for i in range(50)], "x": [str(i) for i in range(50)]}).to_csv(
        source, index=False
    )
    got = rows_where(source, "id", {"001", "006"})
    assert got["x"].tolist() == [str(i) for i in range(50) if i % 7 in (1, 6)]
    assert rows_where(source, "missing", {"1"}).empty


def test_sample_rows_types_a_sample_as_pandas_and_counts_and_keeps_whole_columns(tmp_path, monkeypatch):
    monkeypatch.setattr(exact, "_BLOCK_BYTES", 4096)
    source = tmp_path / "t.csv"
    n = 20_000
    frame = pd.DataFrame({"id": [f"{i:06d}" for i in range(n)], "v": np.arange(n) * 0.5, "y": ["a", "b"] * (n // 2)})
    frame.to_csv(source, index=False)
    sample = sample_rows(source, 1_000, seed=0, whole=["y"])
    assert sample is not None and sample.count == n
    assert 700 <= len(sample.rows) <= 1_400
    assert sample.rows.dtypes.astype(str).tolist() == pd.read_csv(source).dtypes.astype(str).tolist()
    assert sample.whole["y"].tolist() == frame["y"].tolist()
    again = sample_rows(source, 1_000, seed=0, whole=["y"])
    assert again is not None and again.rows.equals(sample.rows)


def test_count_rows_counts_rows_not_lines(tmp_path):
    source = tmp_path / "t.csv"
    source.write_text(TRICKY, encoding="utf-8")
    assert count_rows(source) == 4
