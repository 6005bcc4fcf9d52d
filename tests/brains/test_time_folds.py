"""Recipe scripts on data ordered in time validate on expanding-window folds: no fold fits on
a row later than its validation rows, out-of-fold predictions cover the validated rows only,
and a task without a time column keeps its shuffled folds."""

from __future__ import annotations

import os
import subprocess
import sys

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


def grouped_frame(n_groups: int = 120) -> pd.DataFrame:
    """A grouped ranking in time: each query (a day's session) ranks 4 items; a group's rows
    share its day, and a few groups run into the next day (their last row is a day later)."""
    rng = np.random.default_rng(5)
    rows = []
    for g in range(n_groups):
        day = pd.Timestamp("2020-01-01") + pd.Timedelta(days=g // 2)
        for j, item in enumerate("abcd"):
            late = g % 7 == 0 and j == 3
            x = rng.normal()
            when = day + pd.Timedelta(days=1 if late else 0, hours=j)
            rows.append({"query": f"q{g:03d}", "item": item, "when": when.isoformat(), "x": x, "clicked": int(x > 0.8)})
    return pd.DataFrame(rows)


def lists_frame(n: int = 300) -> pd.DataFrame:
    """One row per user and day: the items seen (history) and the next items wanted."""
    rng = np.random.default_rng(6)
    items = [f"m{i}" for i in range(30)]
    rows = []
    for i in range(n):
        seen = rng.choice(items, 6, replace=False)
        wanted = [f"m{(int(s[1:]) + 1) % 30}" for s in seen[-3:]]
        day = (pd.Timestamp("2021-03-01") + pd.Timedelta(days=i // 3)).strftime("%Y-%m-%d")
        rows.append({"user": f"u{i:03d}", "day": day, "history": " ".join(seen), "next": " ".join(wanted)})
    return pd.DataFrame(rows)


def several_frame() -> pd.DataFrame:
    frame = dated_frame().drop(columns=["label"])
    frame["z"] = (2 * frame["x"] - np.arange(len(frame)) / 200).round(3)
    return frame


# Every script template that validates fold by fold, on data with a time column: the
# recipe, the section its folds are defined before, the name they are kept under.
TEMPLATES = {
    "single": ("lightgbm", "write", "folds"),
    "grouped ranking": ("lambdarank", "score", "folds"),
    "ranked lists (learned)": ("candidates_lgbm", "write", "folds"),
    "ranked lists (mix)": ("candidates_mix", "write", "folds"),
    "several targets": ("lightgbm", "predictions", "FOLDS"),
}


def timed_workspace(root, shape: str) -> tuple[Workspace, str]:
    if shape == "grouped ranking":
        fields = dict(
            name="sessions", task_type="ranking", metric="ndcg_at_k", metric_params={"k": 3}, id_column="query",
            ids_unique=False, key_columns=["item"], target_columns=["clicked"],
            submission_columns=["query", "item", "clicked"], time_column="when",
        )  # fmt: skip
        return Workspace(root, grouped_frame(), n_holdout=60, n_test=60, **fields), "when"
    if shape.startswith("ranked lists"):
        fields = dict(
            name="next", task_type="ranking", metric="map_at_k", metric_params={"k": 3}, id_column="user",
            target_columns=["next"], submission_columns=["user", "next"], time_column="day",
        )  # fmt: skip
        return Workspace(root, lists_frame(), n_holdout=50, n_test=50, **fields), "day"
    if shape == "several targets":
        fields = dict(
            name="two", task_type="regression", metric="mcrmse", id_column="id", target_columns=["y", "z"],
            submission_columns=["id", "y", "z"], time_column="day",
        )  # fmt: skip
        return Workspace(root, several_frame(), **fields), "day"
    return Workspace(root, dated_frame().drop(columns=["label"]), **spec("regression", "day")), "day"


@pytest.mark.parametrize("shape", list(TEMPLATES))
def test_every_template_folds_in_time_order(tmp_path, monkeypatch, shape):
    """The fold code each template renders, run on data whose rows are ordered in time: no
    fold fits on a row (for a grouped ranking: a row of a group) later than the first row it
    validates, each row is validated at most once, the latest block first, and the whole
    script still writes its outputs."""
    recipe, section, name = TEMPLATES[shape]
    ws, column = timed_workspace(tmp_path, shape)
    code = draft_of(ws, recipe).code
    assert "time_folds(" in code and "KFold" not in code, shape
    ns = script_head(ws, code, monkeypatch, until=section)
    when = pd.to_datetime(ns["train"][column], utc=True).reset_index(drop=True)
    folds = ns[name]
    assert len(folds) >= 3, shape
    validated = np.concatenate([valid for _, valid in folds])
    assert len(np.unique(validated)) == len(validated)
    for fit_rows, valid_rows in folds:
        assert when.iloc[fit_rows].max() < when.iloc[valid_rows].min(), shape
    assert when.iloc[folds[0][1]].min() == max(when.iloc[v].min() for _, v in folds)
    if shape == "grouped ranking":  # whole groups: a group is fitted on or validated, never split
        groups = ns["groups"]
        for fit_rows, valid_rows in folds:
            assert not set(groups[fit_rows]) & set(groups[valid_rows])
            assert set(groups[valid_rows]) == set(groups[np.isin(groups, groups[valid_rows])])
    node = ws.root / "nodes" / shape.replace(" ", "_").replace("(", "").replace(")", "")
    node.mkdir(parents=True)
    (node / "solution.py").write_text(code)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(node), "MLGUILD_DATA": str(ws.data), "MLGUILD_SEED": "0"}
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "time-ordered folds" in done.stdout
    written = pd.read_csv(node / "output" / "submission.csv", dtype=str)
    assert list(written.columns) == ws.task["submission_columns"] and len(written) > 0


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
