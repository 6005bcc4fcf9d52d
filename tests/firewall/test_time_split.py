"""Data ordered in time: with a time_column the holdout is the latest labelled rows (ties at
the cut on one side, whole groups when keys repeat), the manifest and the journal say so, and
a random holdout on data whose test rows come after its train rows is a warning naming the fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlguild.config import FirewallConfig, load_config
from mlguild.core.errors import TaskError
from mlguild.firewall.time_split import time_holdout
from mlguild.firewall.verifier import verify_workspace
from mlguild.firewall.workspace import HOLDOUT_INPUTS, build_workspace
from mlguild.launch.entry import start
from mlguild.rundir.journal import read_journal
from mlguild.task.brief import read_brief
from mlguild.task.folder import load_task


def dated_task(root: Path, n: int = 300, per_day: int = 1, time_column: str | None = "day", **spec) -> Path:
    """A small regression task whose rows are days (``per_day`` rows each, in shuffled file
    order) and whose test rows are the days after the train rows."""
    rng = np.random.default_rng(0)
    days = pd.date_range("2020-01-01", periods=n // per_day, freq="D").repeat(per_day)
    frame = pd.DataFrame(
        {
            "id": [f"r{i:04d}" for i in range(len(days))],
            "day": days.strftime("%Y-%m-%d"),
            "x": rng.normal(size=len(days)),
        }
    )
    frame["y"] = (np.arange(len(days)) / 10 + frame["x"]).round(3)
    n_test = len(frame) // 5
    train, test = frame.iloc[:-n_test].sample(frac=1.0, random_state=1), frame.iloc[-n_test:]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    test[["id"]].assign(y=0.0).to_csv(root / "public" / "sample_submission.csv", index=False)
    test[["id", "y"]].to_csv(root / "private" / "answers.csv", index=False)
    task = {
        "name": root.name,
        "task_type": "regression",
        "metric": "rmse",
        "id_column": "id",
        "target_columns": ["y"],
        "submission_columns": ["id", "y"],
        **({"time_column": time_column} if time_column else {}),
        **spec,
    }
    (root / "task.yaml").write_text(yaml.safe_dump(task))
    (root / "description.md").write_text("# Dated\nPredict y for the later days.\n")
    return root


def _build(task_dir: Path, tmp_path: Path, **cfg):
    run = tmp_path / "run"
    run.mkdir()
    return build_workspace(load_task(task_dir), run, FirewallConfig(**cfg))


def test_the_holdout_is_the_latest_labelled_rows(tmp_path):
    ws = _build(dated_task(tmp_path / "t"), tmp_path)
    fit = pd.read_csv(ws.data_dir / "train.csv")
    holdout = pd.read_csv(ws.data_dir / HOLDOUT_INPUTS)
    assert len(holdout) == 48  # 20% of the 240 labelled rows
    assert fit["day"].max() < holdout["day"].min()  # ISO dates order as text
    split = ws.manifest()["split"]
    assert split["kind"] == "time" and split["time_column"] == "day" and not split["stratified"]
    assert split["holdout_first"] == holdout["day"].min() and split["train_last"] == fit["day"].max()
    assert verify_workspace(ws.run_dir, "id", ["y"]).ok


def test_rows_sharing_the_time_at_the_cut_go_wholly_to_one_side(tmp_path):
    ws = _build(dated_task(tmp_path / "t", n=300, per_day=7), tmp_path, holdout_fraction=0.25)
    fit = pd.read_csv(ws.data_dir / "train.csv")
    holdout = pd.read_csv(ws.data_dir / HOLDOUT_INPUTS)
    assert not set(fit["day"]) & set(holdout["day"])
    assert abs(len(holdout) - 0.25 * (len(fit) + len(holdout))) <= 7  # within a day of its share

    times = pd.Series(pd.to_datetime(["2020-01-01"] * 6 + ["2020-01-02"] * 4))
    # The cut falls inside the 6 rows of the first day: they stay together, on the side
    # that keeps the holdout nearest its share (4 rows for a wanted 3, not 10).
    assert time_holdout(times, 3).tolist() == [False] * 6 + [True] * 4
    assert not time_holdout(pd.Series(pd.to_datetime(["2020-01-01"] * 5)), 2).any()  # one time: no order


def test_repeated_keys_move_as_whole_groups_by_their_latest_time(tmp_path):
    root = dated_task(tmp_path / "t", ids_unique=False)
    train = pd.read_csv(root / "public" / "train.csv")
    train["id"] = [f"u{i % 30}" for i in range(len(train))]  # 30 users, each seen on many days
    train.to_csv(root / "public" / "train.csv", index=False)
    ws = _build(root, tmp_path)
    fit = pd.read_csv(ws.data_dir / "train.csv")
    holdout = pd.read_csv(ws.data_dir / HOLDOUT_INPUTS)
    assert not set(fit["id"]) & set(holdout["id"])  # no user on both sides
    # A user goes by their latest day: every training row is older than every holdout user's last day.
    assert fit["day"].max() <= holdout.groupby("id")["day"].max().min()
    assert "latest time" in ws.manifest()["split"]["groups"]
    assert verify_workspace(ws.run_dir, "id", ["y"]).ok


def test_a_time_column_that_is_not_dates_is_refused_with_the_fix(tmp_path):
    root = dated_task(tmp_path / "t")
    train = pd.read_csv(root / "public" / "train.csv")
    train.loc[3, "day"] = "soon"
    train.to_csv(root / "public" / "train.csv", index=False)
    with pytest.raises(TaskError, match="not dates") as info:
        _build(root, tmp_path)
    assert "time_column: null" in info.value.fix


@pytest.mark.parametrize(
    ("time_column", "overrides", "fix"),
    [(None, [], "set time_column: day in task.yaml"), ("day", ["firewall.holdout=random"], "drop firewall.holdout")],
)
def test_a_random_holdout_on_time_ordered_data_is_a_warning_naming_the_fix(tmp_path, time_column, overrides, fix):
    said: list[tuple[str, bool]] = []
    cfg = load_config(None, ["budget.iterations=1", *overrides])
    run = start(
        dated_task(tmp_path / "t", time_column=time_column),
        cfg,
        runs_dir=tmp_path / "runs",
        launch=False,
        say=lambda line, warning: said.append((line, warning)),
    )
    warnings = [line for line, warning in said if warning and "holdout is random" in line]
    assert len(warnings) == 1 and fix in warnings[0] and "'day'" in warnings[0]
    split = json.loads((run.path / "manifest.json").read_text())["split"]
    assert split["kind"] == "random" and fix in split["warning"]
    started = read_journal(run.path / "journal.jsonl")[0]
    assert fix in started["holdout_split"]["warning"]
    assert fix in read_brief(run.path)


def test_a_time_ordered_run_says_its_holdout_in_the_journal_and_the_brief(tmp_path):
    said: list[tuple[str, bool]] = []
    run = start(
        dated_task(tmp_path / "t"),
        load_config(None, ["budget.iterations=1"]),
        runs_dir=tmp_path / "runs",
        launch=False,
        say=lambda line, warning: said.append((line, warning)),
    )
    assert any(line.startswith("holdout the latest 48 labelled rows by 'day'") and not w for line, w in said)
    assert not any(w for _, w in said if "holdout" in _)
    assert read_journal(run.path / "journal.jsonl")[0]["holdout_split"]["kind"] == "time"
    brief = read_brief(run.path)
    assert "ordered in time by `day`" in brief and "never train on rows later" in brief


def test_plain_data_keeps_a_random_holdout_without_a_warning(tmp_path):
    from conftest import make_task

    ws = _build(make_task(tmp_path / "plain"), tmp_path)
    assert ws.manifest()["split"] == {**ws.manifest()["split"], "kind": "random"}
    assert "warning" not in ws.manifest()["split"]


def test_the_verifier_rereads_the_files_to_check_a_time_split(tmp_path):
    ws = _build(dated_task(tmp_path / "t", time_column=None), tmp_path)  # a random split
    manifest = ws.manifest()
    manifest["split"].update(kind="time", time_column="day")  # a builder that claims otherwise
    ws.manifest_path.write_text(json.dumps(manifest))
    report = verify_workspace(ws.run_dir, "id", ["y"])
    assert not report.ok and any("later than a holdout row" in p for p in report.problems)
