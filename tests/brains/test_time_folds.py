"""Recipe scripts on data ordered in time validate on expanding-window folds: no fold fits on
a row later than its validation rows, out-of-fold predictions cover the validated rows only,
and a task without a time column keeps its shuffled folds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import Workspace, draft_of, script_head


def dated_frame(n: int = 400, zoned: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    days = pd.date_range("2019-01-01", periods=n // 2, freq="D").repeat(2)  # two rows a day: ties
    text = days.strftime("%Y-%m-%d")
    if zoned:  # timestamps in two zones: only in UTC do they sort as the days do
        text = [f"{d}T{'06:00:00+12:00' if i % 2 else '00:30:00Z'}" for i, d in enumerate(text)]
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(n)], "day": text, "x": rng.normal(size=n)})
    frame["y"] = (frame["x"] + np.arange(n) / 100).round(3)
    frame["label"] = np.where(frame["x"] + rng.normal(scale=0.5, size=n) > 0, "yes", "no")
    return frame


def spec(task_type: str, time_column: str | None) -> dict:
    target = "y" if task_type == "regression" else "label"
    extra = {"positive_label": "yes"} if task_type == "binary" else {}
    return dict(
        name="dated",
        task_type=task_type,
        metric="rmse" if task_type == "regression" else "roc_auc",
        id_column="id",
        target_columns=[target],
        submission_columns=["id", target],
        time_column=time_column,
        **extra,
    )


@pytest.mark.parametrize(
    ("task_type", "recipe", "zoned"),
    [("regression", "lightgbm", False), ("binary", "linear", False), ("regression", "lightgbm", True)],
)
def test_no_fold_trains_on_rows_later_than_its_validation_rows(tmp_path, monkeypatch, task_type, recipe, zoned):
    frame = dated_frame(zoned=zoned)
    other = "label" if task_type == "regression" else "y"
    ws = Workspace(tmp_path, frame.drop(columns=[other]), **spec(task_type, "day"))
    code = draft_of(ws, recipe).code
    assert "time-ordered" in draft_of(ws, recipe).plan
    ns = script_head(ws, code, monkeypatch, until="write")
    when = pd.to_datetime(ns["train"]["day"], utc=True)
    folds = ns["folds"]
    assert len(folds) == 5
    validated = np.concatenate([valid for _, valid in folds])
    assert len(np.unique(validated)) == len(validated)  # each row validated at most once
    for fit_rows, valid_rows in folds:
        assert when.iloc[fit_rows].max() < when.iloc[valid_rows].min()  # the past only, ties kept together
        later = when > when.iloc[valid_rows].max()
        assert not later.iloc[fit_rows].any()
    # The latest block is validated first (the one a time budget never cuts).
    assert when.iloc[folds[0][1]].min() == max(when.iloc[v].min() for _, v in folds)
    # Out-of-fold predictions exist for the validated rows only: the first block has none.
    done = ns["done"]
    assert done.sum() == len(validated) and not done[when <= when.iloc[validated].min() - pd.Timedelta(days=1)].any()
    ws.run(code, f"{task_type}-{recipe}-{zoned}")  # the whole script still meets the contract


def test_without_a_time_column_the_folds_stay_shuffled(tmp_path):
    ws = Workspace(tmp_path, dated_frame().drop(columns=["label"]), **spec("regression", None))
    code = draft_of(ws, "lightgbm").code
    assert "time_folds" not in code and "KFold(N_FOLDS, shuffle=True" in code


def test_the_llm_prompts_say_the_data_are_ordered_in_time():
    from mlguild.prompts import render
    from mlguild.task.spec import TaskSpec

    rows = {"train": 240, "holdout": 60, "test": 75}
    timed = TaskSpec(**spec("regression", "day")).public_dict()
    contract = " ".join(render("contract", task=timed, rows=rows, prediction_help="a number").split())
    assert "ordered in time by `day`: the holdout is the latest labelled rows" in contract
    assert "never train on rows later than the rows you validate on" in contract
    plain = TaskSpec(**spec("regression", None)).public_dict()
    assert "ordered in time" not in render("contract", task=plain, rows=rows, prediction_help="a number")
