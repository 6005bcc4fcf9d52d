"""Leaky cross-validation is caught: a node whose out-of-fold score beats its holdout score
beyond the noise of both is flagged ``leaky_cv``, with both numbers in its report and in the
prompts that build on it, and its out-of-fold predictions are kept out of every blend."""

from __future__ import annotations

from conftest import make_task, scripted_agent

from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.metrics import get_metric
from mlguild.scoring.oof import OofResult, leaky_cv
from mlguild.search.blend import blend_members

# k-nearest neighbours on the three features. HONEST predicts each training row from
# models fitted on the other folds; LEAKY "forgets" the folds and predicts the training rows
# with the model fitted on them all (its out-of-fold file is in-sample), as a script that
# fits its preprocessing or model before splitting does.
KNN = """
import os
from pathlib import Path
import numpy as np, pandas as pd
from sklearn.model_selection import KFold
from sklearn.neighbors import KNeighborsClassifier
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={"id": str})
holdout = pd.read_csv(data / "holdout.csv", dtype={"id": str})
test = pd.read_csv(data / "test.csv", dtype={"id": str})
cols, y = ["x0", "x1", "x2"], train["y"].to_numpy()
model = lambda: KNeighborsClassifier(N_NEIGHBOURS)
if LEAKY:
    oof = model().fit(train[cols], y).predict_proba(train[cols])[:, 1]
else:
    oof = np.zeros(len(train))
    for fit, valid in KFold(5, shuffle=True, random_state=0).split(train):
        oof[valid] = model().fit(train[cols].iloc[fit], y[fit]).predict_proba(train[cols].iloc[valid])[:, 1]
final = model().fit(train[cols], y)
os.makedirs("output", exist_ok=True)
for name, frame, p in (("oof", train, oof), ("holdout", holdout, None), ("submission", test, None)):
    p = final.predict_proba(frame[cols])[:, 1] if p is None else p
    pd.DataFrame({"id": frame["id"], "y": p}).to_csv(f"output/{name}.csv", index=False)
"""
LEAKY = "LEAKY, N_NEIGHBOURS = True, 1\n" + KNN
HONEST = "LEAKY, N_NEIGHBOURS = False, 15\n" + KNN
HONEST_TOO = "LEAKY, N_NEIGHBOURS = False, 25\n" + KNN


def test_a_validation_that_leaks_is_flagged_and_kept_out_of_blends(tmp_path):
    agent, run = scripted_agent(make_task(tmp_path / "t", n=800), tmp_path, [HONEST, LEAKY, HONEST_TOO])
    graph = agent.session.state.graph
    for i in range(3):
        agent.step(Action(Op.DRAFT, (), f"draft {i}"), timeout=60)
    honest, leaky, honest_too = (graph[f"n000{i}"] for i in (1, 2, 3))
    assert all(n.score is not None and n.oof_score is not None for n in (honest, leaky, honest_too))
    assert leaky.oof_score == 1.0 and leaky.score < 0.95  # in-sample 1-NN: perfect out-of-fold, not on the holdout
    assert "leaky_cv" in leaky.flags
    assert "leaky_cv" not in honest.flags and "leaky_cv" not in honest_too.flags
    assert abs(honest.oof_score - honest.score) < 0.1  # an honest validation agrees with the holdout

    assert leaky.id not in blend_members(graph, size=3) and set(blend_members(graph, size=3)) == {"n0001", "n0003"}
    report = (run.node_dir(leaky.id) / "report.md").read_text()
    assert "out-of-fold roc_auc is far better than its holdout roc_auc (1 against" in report
    view = agent.session.contexts.parent_view(graph, leaky)
    assert view.oof_score == 1.0 and any("validation leaks" in w for w in view.warnings)
    journal = [r for r in run.journal.records if r["type"] == "node_finished" and r["id"] == leaky.id]
    assert journal[0]["oof_score"] == 1.0 and "leaky_cv" in journal[0]["flags"]


def test_the_gap_must_pass_the_noise_of_both_scores():
    auc = get_metric("roc_auc").direction
    # a gap of 0.02 with a holdout noise of 0.01 (2,000 out-of-fold rows against 500 holdout rows)
    oof = OofResult(0.92, 2000)
    assert not leaky_cv(0.90, 0.01, 500, oof, auc, z=4.0)
    assert leaky_cv(0.85, 0.01, 500, oof, auc, z=4.0)
    assert not leaky_cv(0.85, 0.01, 500, oof, auc, z=0)  # off
    assert not leaky_cv(0.85, None, 500, oof, auc, z=4.0)  # noise unknown: no alarm
    rmse = get_metric("rmse").direction  # smaller is better: an out-of-fold error far below the holdout's
    assert leaky_cv(2.0, 0.05, 500, OofResult(1.0, 2000), rmse, z=4.0)
    assert not leaky_cv(1.0, 0.05, 500, OofResult(2.0, 2000), rmse, z=4.0)
