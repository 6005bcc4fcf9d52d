"""A boosting recipe whose fit would pass its time limit stops growing trees in time and
finishes with the trees it has (issue 38: work that can finish; issue 40: a refit on ten
million rows), instead of the node being killed by its limit."""

import re

import numpy as np
import pandas as pd
import pytest
from conftest import binary_workspace, draft_of

from mlguild.run.fit_record import fit_record


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 400
    x = rng.normal(size=(n, 3))
    frame = pd.DataFrame({"row": [f"r{i}" for i in range(n)], "a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})
    frame["label"] = np.where(x[:, 0] - x[:, 1] + rng.normal(scale=0.5, size=n) > 0, "yes", "no")
    return binary_workspace(tmp_path_factory.mktemp("deadline"), frame, "deadline")


@pytest.mark.parametrize("recipe", ["lightgbm", "xgboost", "catboost", "hist_gb"])
def test_a_boosting_fit_past_its_deadline_keeps_the_trees_it_has_and_the_script_finishes(table, recipe):
    code = draft_of(table, recipe).code
    # A budget spent before the first tree: every fold's model stops after one tree, and the
    # cross-validation after its first fold; the outputs are whole all the same.
    done = table.run(code, f"late-{recipe}", budget=0.01)
    assert "boosting stopped after 1 trees: the fit's share of the time limit is spent" in done.stdout
    assert "stopping after 1 folds: another would pass the time budget" in done.stdout
    # With its time, the same script grows its trees until early stopping.
    done = table.run(code, f"on-time-{recipe}", budget=120)
    folds = re.search(r"folds completed: (\d+) of (\d+)", done.stdout)
    assert "boosting stopped" not in done.stdout and folds[1] == folds[2]
    # It says so, for the final stage: its refit on more rows than its time allows in full
    # still finishes (mlguild.final.stage).
    assert fit_record(table.root / "nodes" / f"on-time-{recipe}" / "output", 120.0)["fits_by_deadline"] is True


def test_a_model_without_a_deadline_does_not_say_it_stops_in_time(table):
    done = table.run(draft_of(table, "linear").code, "linear", budget=120)
    said = fit_record(table.root / "nodes" / "linear" / "output", 120.0)
    assert done.returncode == 0 and said["fit_folds"] >= 1 and "fits_by_deadline" not in said


class _FakeClock:
    """A clock that moves only when trees grow: one second a tree."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now


def test_histogram_boosting_fills_the_time_before_its_deadline_with_trees():
    # scikit-learn grows the trees in warm-start rounds; the last round takes the trees the time
    # left holds, so a deadline at 100 s of one-second trees ends near 100 trees, not at the 64
    # a doubling round would stop at (the next doubling passing the deadline).
    from mlguild.brains.recipes.render import _environment

    code = (
        _environment()
        .get_template("models/hist_gb.py.j2")
        .render(params={"max_iter": 1000, "learning_rate": 0.1}, classification=True)
    )
    clock, fits = _FakeClock(), []

    class Model:
        def __init__(self, **params):
            self.params, self.n_iter_ = params, 0

        def set_params(self, **params):
            self.params.update(params)

        def fit(self, x, y):
            clock.now += self.params["max_iter"] - self.n_iter_
            self.n_iter_ = self.params["max_iter"]
            fits.append(self.n_iter_)

    scope = {"np": np, "time": clock, "SEED": 0, "X_holdout": np.zeros((0, 1)), "X_test": np.zeros((0, 1))}
    exec(code, scope)
    scope.update(HistGradientBoostingClassifier=Model, fit_deadline=lambda fit_rows, predict_rows: 100.0)
    model = scope["fit_model"](np.zeros((400, 1)), np.array([0, 1] * 200), np.zeros((10, 1)), None)
    assert fits[0] == 32 and fits[1] == 64  # a round at most doubles the trees
    assert 90 <= model.n_iter_ <= 100 and clock.now <= 100, fits
