"""``leaky_cv`` compares like with like: on rows ordered in time, honest out-of-fold scores on
the past beat a holdout in the future (drift), so the out-of-fold rows nearest the holdout
are compared with it, with no false alarm, while a leak planted on the same data is still
flagged; and a grouped ranking's out-of-fold file is scored by (group, item) and checked too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml
from conftest import scripted_agent

from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.scoring.oof import leaky_cv
from mlguild.sources.examples import build_example

# A logistic regression on x validated on expanding-window folds (the honest one), or with
# out-of-fold predictions made in-sample by a 1-nearest-neighbour model (the leak).
DRIFTING = """
import os
from pathlib import Path
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={"id": str}).sort_values("day", kind="stable").reset_index(drop=True)
holdout = pd.read_csv(data / "holdout.csv", dtype={"id": str})
test = pd.read_csv(data / "test.csv", dtype={"id": str})
X, y = train[["x"]].to_numpy(), train["y"].to_numpy()
blocks = np.array_split(np.arange(len(train)), 6)
oof = np.full(len(train), np.nan)
for k in range(1, 6):
    fit = np.concatenate(blocks[:k])
    oof[blocks[k]] = LogisticRegression().fit(X[fit], y[fit]).predict_proba(X[blocks[k]])[:, 1]
if LEAKY:
    oof = KNeighborsClassifier(1).fit(train[["x", "z"]], y).predict_proba(train[["x", "z"]])[:, 1]
final = LogisticRegression().fit(X, y)
os.makedirs("output", exist_ok=True)
done = ~np.isnan(oof)
pd.DataFrame({"id": train["id"][done], "y": oof[done]}).to_csv("output/oof.csv", index=False)
for name, frame in (("holdout", holdout), ("submission", test)):
    pd.DataFrame({"id": frame["id"], "y": final.predict_proba(frame[["x"]])[:, 1]}).to_csv(f"output/{name}.csv", index=False)
"""


def _drifting_task(root, n: int = 3000):
    """A day per 4 rows; the label follows x strongly at first and barely at the end (the
    signal fades with time), so every honest model predicts the past better than the future."""
    rng = np.random.default_rng(1)
    strength = np.linspace(6.0, 0.5, n)
    x, z = rng.normal(size=n), rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-strength * x))).astype(int)
    days = (pd.Timestamp("2018-01-01") + pd.to_timedelta(np.arange(n) // 4, unit="D")).strftime("%Y-%m-%d")
    frame = pd.DataFrame({"id": [f"r{i:05d}" for i in range(n)], "day": days, "x": x, "z": z, "y": y})
    n_test = n // 6
    train, test = frame.iloc[:-n_test], frame.iloc[-n_test:]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "y": 0.5}).to_csv(root / "public" / "sample_submission.csv", index=False)
    test[["id", "y"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {"name": "drifting", "task_type": "binary", "metric": "roc_auc", "id_column": "id",
            "target_columns": ["y"], "submission_columns": ["id", "y"], "positive_label": "1", "time_column": "day"}  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text("# drifting\nA signal that fades over time.\n")
    return root


def test_on_rows_ordered_in_time_drift_is_no_leak_and_a_planted_leak_still_is(tmp_path):
    task = _drifting_task(tmp_path / "drifting")
    honest, leaky = "LEAKY = False\n" + DRIFTING, "LEAKY = True\n" + DRIFTING
    agent, run = scripted_agent(task, tmp_path, [honest, leaky], **{"firewall.confirm_fraction": 0})
    assert run.workspace.manifest()["split"]["kind"] == "time"
    for i in range(2):
        agent.step(Action(Op.DRAFT, (), f"draft {i}"), timeout=60)
    graph = agent.session.state.graph
    fair, planted = graph["n0001"], graph["n0002"]
    assert fair.score is not None and fair.oof_score is not None
    # Against every out-of-fold row, the honest node's past beats its future beyond the noise:
    # the comparison the check made before it compared like with like.
    scorers, rows = agent.session.scorers, len(agent.session.scorers.holdout.expected_ids)
    spread = scorers.holdout.spread(run.node_dir("n0001") / "output" / "holdout.csv")
    everything = agent.session.executor.oof_scorer.score(run.node_dir("n0001") / "output" / "oof.csv")
    assert everything is not None and leaky_cv(fair.score, spread, rows, everything, "maximize", 4.0)
    assert "leaky_cv" not in fair.flags  # the latest fold against the holdout: drift is no leak
    assert planted.oof_score > 0.99 and "leaky_cv" in planted.flags


# A grouped ranking (the fishing example): a pointwise logistic regression whose out-of-fold
# scores come from folds of whole anglers (honest), or from the model fitted on every row
# with the angler's own choice as a feature (leaky).
GROUPED = """
import os
from pathlib import Path
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
data = Path(os.environ["MLGUILD_DATA"])
read = lambda name: pd.read_csv(data / name, dtype={"angler": str, "mode": str})
train, holdout, test = read("train.csv"), read("holdout.csv"), read("test.csv")
features = lambda frame: pd.get_dummies(frame[["price", "catch", "income", "mode"]], columns=["mode"], dtype=float)
X, y = features(train), train["chosen"].to_numpy()
oof = np.zeros(len(train))
for fit, valid in GroupKFold(5).split(X, y, train["angler"]):
    oof[valid] = LogisticRegression(max_iter=500).fit(X.iloc[fit], y[fit]).predict_proba(X.iloc[valid])[:, 1]
if LEAKY:
    oof = y + 0.01 * oof
final = LogisticRegression(max_iter=500).fit(X, y)
os.makedirs("output", exist_ok=True)
pd.DataFrame({"angler": train["angler"], "mode": train["mode"], "chosen": oof}).to_csv("output/oof.csv", index=False)
for name, frame in (("holdout", holdout), ("submission", test)):
    p = final.predict_proba(features(frame).reindex(columns=X.columns, fill_value=0.0))[:, 1]
    pd.DataFrame({"angler": frame["angler"], "mode": frame["mode"], "chosen": p}).to_csv(f"output/{name}.csv", index=False)
"""


def test_a_grouped_ranking_gets_its_out_of_fold_score_and_the_leak_check(tmp_path):
    task = build_example("fishing", tmp_path / "fishing")
    honest, leaky = "LEAKY = False\n" + GROUPED, "LEAKY = True\n" + GROUPED
    agent, _ = scripted_agent(task, tmp_path, [honest, leaky])
    for i in range(2):
        agent.step(Action(Op.DRAFT, (), f"draft {i}"), timeout=60)
    graph = agent.session.state.graph
    fair, planted = graph["n0001"], graph["n0002"]
    assert fair.score is not None and fair.oof_score is not None, (fair.status, fair.failure)
    assert abs(fair.oof_score - fair.score) < 0.1 and "leaky_cv" not in fair.flags
    assert planted.oof_score > 0.99 and "leaky_cv" in planted.flags
