"""Parquet copies of a large table's CSV files (mlguild.util.parquet) and the workspace's: typed
and narrowed alike over every file, the ids and labels kept as text, read by the recipes, kept
in step with the CSV when a copy of the data is rewritten, and checked by the verifier."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
from conftest import make_task

from mlguild.config import load_config
from mlguild.core.errors import TaskError
from mlguild.firewall.verifier import verify_workspace
from mlguild.run.refit import write_full_data
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task
from mlguild.util.parquet import column_types, parquet_of, refresh_parquet, write_parquet


def test_columns_are_typed_over_every_file_and_read_as_pandas_reads_the_csv(tmp_path):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("id,small,wide,gappy,word,late,y\n007,1,70000,1.5,x,1,Yes\n008,-3,2,NA,y,2,No\n009,5,3,,NA,3,\n")
    test.write_text("id,small,wide,gappy,word,late\n010,4,5,2.25,z,oops\n")
    types = column_types([train, test], text=["id", "y"])
    assert {k: str(v) for k, v in types.items()} == {
        "id": "string", "small": "int8", "wide": "int32", "gappy": "float", "word": "string",
        "late": "string",  # a number in train, a word in test: text in both
        "y": "string",
    }  # fmt: skip
    for path in (train, test):
        write_parquet(path, types)
    typed = pd.read_parquet(parquet_of(train))
    written = pd.read_csv(train, dtype={"id": str, "y": str})
    assert typed["id"].tolist() == ["007", "008", "009"] and typed["small"].dtype == "int8"
    assert typed["gappy"].dtype == "float32" and typed["gappy"].isna().tolist() == written["gappy"].isna().tolist()
    assert typed["word"].isna().tolist() == written["word"].isna().tolist() == [False, False, True]
    assert typed["y"].isna().tolist() == [False, False, True]  # a missing label is missing, as pandas reads it
    assert pd.read_parquet(parquet_of(test))["late"].tolist() == ["oops"]


def test_a_rewritten_csv_gets_its_copy_again_or_the_folder_loses_its_copies(tmp_path):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("id,x\na,1\nb,2\n")
    test.write_text("id,x\nc,3\n")
    types = column_types([train, test], text=["id"])
    write_parquet(train, types), write_parquet(test, types)
    test.write_text("id,x\nd,4\ne,5\n")
    refresh_parquet(test)
    assert pd.read_parquet(parquet_of(test))["id"].tolist() == ["d", "e"]
    test.write_text("id,x\nf,not a number\n")  # no longer fits its column's type
    refresh_parquet(test)
    assert not list(tmp_path.glob("*.parquet"))  # scripts read the CSV files, all alike
    try:
        write_parquet(test, types)
    except TaskError as exc:
        assert "cannot write test.csv as Parquet" in str(exc)
    else:
        raise AssertionError("a value that does not fit its type must be refused")


def test_a_large_tables_workspace_has_parquet_copies_the_verifier_checks_and_refits_keep_in_step(tmp_path):
    cfg = load_config(None, ["firewall.parquet_above_mb=0"])  # every table counts as large
    run = create_run(load_task(make_task(tmp_path / "t", n=400)), cfg, tmp_path / "runs")
    data = run.workspace.data_dir
    for name in ("train", "holdout", "test"):
        typed, written = pd.read_parquet(data / f"{name}.parquet"), pd.read_csv(data / f"{name}.csv", dtype={"id": str})
        assert typed["id"].tolist() == written["id"].tolist() and typed["x0"].dtype == "float32"
    assert verify_workspace(run.path, "id", ["y"]).ok
    full = write_full_data(run.spec, run.workspace, tmp_path / "full")  # train + holdout, for a refit
    assert pq.ParquetFile(full / "train.parquet").metadata.num_rows == len(pd.read_csv(full / "train.csv"))
    # A copy that is not its CSV's rows is caught.
    partial = pd.read_parquet(data / "holdout.parquet").iloc[1:]
    target = data / "holdout.parquet"
    target.chmod(0o644)
    partial.to_parquet(target, index=False)
    problems = verify_workspace(run.path, "id", ["y"]).problems
    assert any("holdout.parquet does not hold the rows of holdout.csv" in p for p in problems), problems
    run.close()
