"""The final refit of a recipe script by itself is one model fitted on every labelled row
(MLGUILD_REFIT=1), not one per fold on (K - 1) / K of them: half the fitting of a 3-fold script
and a third of its predicting, which is what lets a ten-million-row table be refitted whole.
A blend's members keep their folds: the blend's rerun reads their out-of-fold predictions."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import make_task

from mlguild.brains import get_brain
from mlguild.config import load_config
from mlguild.core.graph import Node
from mlguild.core.vocabulary import Op, Status
from mlguild.final.stage import finish
from mlguild.run.loop import Agent
from mlguild.run.refit import node_refit_seconds, one_model, unscaled_refit_seconds
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task


def test_a_one_model_refit_is_priced_as_one_fold_scaled_to_every_row():
    node = Node("n0001", Op.DRAFT, (), 1)
    node.meta = {"train_rows": 100, "train_rows_of": 1000}  # a tenth of the search's rows
    node.timing = {"exec_s": 100.0, "fit_s": 60.0}
    assert not one_model(node)  # it never said it reads MLGUILD_REFIT
    # its fitting grows 10 times to the search's rows and 1.25 times to every labelled row; the rest stays
    assert unscaled_refit_seconds(node, 1.25, alone=True) == pytest.approx(40 + 60 * 10 * 1.25)
    node.timing.update(fit_folds=3, cv_folds=3)
    assert one_model(node)
    # three fold models took 60 s: one on 2/3 of the sample's rows 20 s, on all of them 30 s,
    # on every labelled row (10 times the sample, 1.25 times the search's file) 375 s; reading
    # and predicting (40 s) kept whole
    assert unscaled_refit_seconds(node, 1.25, alone=True) == pytest.approx(40 + 375)
    assert unscaled_refit_seconds(node, 1.25, alone=False) == pytest.approx(790)  # as a blend's member: 3 fold models
    assert node_refit_seconds(node, 1.25, 2.0, alone=True) == pytest.approx(2 * 415)


@pytest.mark.slow
def test_a_recipe_node_refitted_by_itself_is_one_model_on_every_labelled_row(tmp_path):
    sets = ["budget.iterations=2", "brain.eda=false", "final.reference_models=false", "search.fuse_every=0"]
    run = create_run(load_task(make_task(tmp_path / "t", n=400)), load_config(None, sets), tmp_path / "runs")
    agent = Agent(open_session(run, get_brain("recipes")))
    stop = agent.run_loop()
    graph = agent.session.state.graph
    drafts = [n for n in graph if n.op == Op.DRAFT and n.ok]
    assert drafts and all(one_model(n) and n.timing["fit_folds"] == n.timing["cv_folds"] for n in drafts)
    done = finish(agent.session, stop)
    refit = next(n for n in graph if n.op == Op.REFIT)
    assert refit.status == Status.FINAL_OK and refit.meta.get("one_model") is True, refit.failure
    assert done.choice is not None and done.choice["refit"] is True, done.choice
    out = run.node_dir(refit.id) / "output"
    assert json.loads((out / "model" / "mlguild-model.json").read_text())["folds"] == 1  # one model
    assert pd.read_csv(out / "oof.csv").empty  # nothing predicted out of fold
    split = run.workspace.manifest()["split"]
    submission = pd.read_csv(out / "submission.csv")
    assert len(submission) == len(pd.read_csv(run.workspace.data_dir / "test.csv"))
    stdout = (run.node_dir(refit.id) / "stdout.txt").read_text()
    labelled = split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    assert f"one model fitted on all {labelled} training rows" in stdout
    run.close()
