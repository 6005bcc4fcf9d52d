"""The TabM recipe (templates/models/tabm.py.j2): a network trained from scratch on the CPU,
offered where tabm is installed, deterministic by seed, stopping at its deadline with its best
epoch, and predicting on the target's own scale."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import Workspace, ames_workspace
from conftest import rdata as _rdata
from conftest import script_head as _script_head

from mlguild.brains.recipes.catalog import DRAFT_ORDER, recipes_for
from mlguild.brains.recipes.draft import draft_meta
from mlguild.brains.recipes.render import render_script

pytest.importorskip("tabm")


@pytest.fixture(scope="module")
def churn(tmp_path_factory):
    frame = _rdata("modeldata", "wa_churn", 400)
    frame.insert(0, "customer", [f"{i:05d}" for i in range(len(frame))])
    return Workspace(
        tmp_path_factory.mktemp("churn"),
        frame,
        name="churn",
        task_type="binary",
        metric="roc_auc",
        id_column="customer",
        target_columns=["churn"],
        submission_columns=["customer", "churn"],
        positive_label="Yes",
    )


@pytest.fixture(scope="module")
def ames(tmp_path_factory):
    return ames_workspace(tmp_path_factory.mktemp("ames"), 400, "rmse")


def _code(ws: Workspace, **params) -> str:
    meta = draft_meta("tabm", ws.task, ws.profile)
    meta["params"].update(params)
    return render_script(ws.task, ws.profile, meta, "test")


def test_tabm_is_a_tabular_draft_offered_only_where_tabm_is_installed(churn, monkeypatch):
    assert "tabm" in DRAFT_ORDER["tabular"] and "tabm" in recipes_for(churn.task)
    meta = draft_meta("tabm", churn.task, churn.profile)
    assert meta["features"]["quantile_numeric"]  # a network's inputs: numbers on one normal scale
    assert meta["run"]["max_train_rows"] is None
    large = draft_meta("tabm", churn.task, {**churn.profile, "n_train": 200_000})
    assert large["run"]["max_train_rows"] == 50_000  # an epoch costs in proportion to its rows
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tabm" else real(name, *a))
    assert "tabm" not in recipes_for(churn.task) and recipes_for(churn.task)


def test_tabm_is_deterministic_and_stops_at_its_deadline_with_usable_weights(churn, monkeypatch, capsys):
    ns = _script_head(churn, _code(churn, epochs=3, d_block=32, k=4), monkeypatch, until="validate")
    X, y, predict = ns["X"][:300], ns["y"][:300], ns["predict"]
    net = ns["TabMNet"](0, **ns["PARAMS"])
    later = 1e12  # a deadline that never comes
    first, again = (predict(ns["TabMNet"](0, **ns["PARAMS"]).fit(X, y, later), X[:50]) for _ in range(2))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, predict(ns["TabMNet"](1, **ns["PARAMS"]).fit(X, y, later), X[:50]))
    np.testing.assert_allclose(first.sum(axis=1), 1.0)
    assert first.shape == (50, 2) and "network stopped" not in capsys.readouterr().out

    hasty = net.fit(X, y, 0.0)  # a deadline already past: one batch, then its weights all the same
    assert "network stopped in epoch 1 of 3" in capsys.readouterr().out and hasty.epochs_run_ == 1
    assert np.isfinite(predict(hasty, X[:50])).all()


def test_tabm_stops_early_when_its_stop_rows_stop_improving(churn, monkeypatch):
    ns = _script_head(churn, _code(churn, epochs=200, patience=2, d_block=32, k=4), monkeypatch, until="validate")
    net = ns["TabMNet"](0, **ns["PARAMS"]).fit(ns["X"], ns["y"], 1e12)
    assert net.epochs_run_ < 200  # the loss on a tenth of the fit rows stopped falling


def test_tabm_regression_predicts_on_the_targets_scale(ames, monkeypatch):
    ns = _script_head(ames, _code(ames, epochs=4, d_block=32, k=4), monkeypatch, until="validate")
    X, y = ns["X"], ns["y"]
    ns["fold_models"] = []  # cross-validation's first fit (the validate section defines the list)
    model = ns["fit_model"](X[:200], y[:200], X[200:], y[200:])
    values = ns["predict"](model, X[200:])
    assert values.shape == (len(y) - 200,) and np.isfinite(values).all()
    # trained on the standardised target, it predicts prices, in the range of the prices
    assert y.min() / 2 < values.mean() < y.max() and values.std() > 0


@pytest.mark.slow
def test_a_tabm_draft_runs_and_scores_its_folds(churn):
    done = churn.run(_code(churn, epochs=4), "draft-tabm")
    assert "cv_score:" in done.stdout and "folds completed: 5 of 5" in done.stdout
