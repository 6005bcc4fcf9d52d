"""The two leaks issue 26 names, planted: a feature derived from the target (encoded on every
training row, its own label included, before the folds are cut) and groups split between
folds (a patient's rows in both the fitting and the validation part). Each is flagged
``leaky_cv`` and kept out of the blend; its honest twin is not flagged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml
from conftest import make_task, scripted_agent

from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.search.blend import blend_members

# A target encoding of x1 cut into fine bins (about three training rows each), with a
# logistic regression on it; LEAKY encodes on every training row before the folds (each row's
# own label is in its feature), the honest one inside each fold's fitting rows.
TARGET_ENCODED = """
import os
from pathlib import Path
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={"id": str})
holdout = pd.read_csv(data / "holdout.csv", dtype={"id": str})
test = pd.read_csv(data / "test.csv", dtype={"id": str})
edges = np.quantile(train["x1"], np.linspace(0, 1, len(train) // 3 + 1)[1:-1])
bins = lambda frame: np.searchsorted(edges, frame["x1"])
def encode(fit, frame):
    means = fit.groupby(bins(fit))["y"].mean()
    return pd.Series(bins(frame)).map(means).fillna(fit["y"].mean()).to_numpy().reshape(-1, 1)
oof = np.zeros(len(train))
for rows, valid in KFold(5, shuffle=True, random_state=0).split(train):
    source = train if LEAKY else train.iloc[rows]
    model = LogisticRegression().fit(encode(source, train.iloc[rows]), train["y"].iloc[rows])
    oof[valid] = model.predict_proba(encode(source, train.iloc[valid]))[:, 1]
model = LogisticRegression().fit(encode(train, train), train["y"])
os.makedirs("output", exist_ok=True)
for name, frame, p in (("oof", train, oof), ("holdout", holdout, None), ("submission", test, None)):
    p = model.predict_proba(encode(train, frame))[:, 1] if p is None else p
    pd.DataFrame({"id": frame["id"], "y": p}).to_csv(f"output/{name}.csv", index=False)
"""

# One nearest neighbour on a patient's features; LEAKY cuts plain folds (a patient's other
# rows sit in the fitting part), the honest one whole patients per fold.
GROUPED = """
import os
from pathlib import Path
import numpy as np, pandas as pd
from sklearn.model_selection import GroupKFold, KFold
from sklearn.neighbors import KNeighborsClassifier
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={"id": str})
holdout = pd.read_csv(data / "holdout.csv", dtype={"id": str})
test = pd.read_csv(data / "test.csv", dtype={"id": str})
cols, y = ["f0", "f1"], train["y"].to_numpy()
folds = KFold(5, shuffle=True, random_state=0).split(train) if LEAKY else GroupKFold(5).split(train, groups=train["patient"])
oof = np.zeros(len(train))
for rows, valid in folds:
    model = KNeighborsClassifier(1).fit(train[cols].iloc[rows], y[rows])
    oof[valid] = model.predict_proba(train[cols].iloc[valid])[:, 1]
model = KNeighborsClassifier(1).fit(train[cols], y)
os.makedirs("output", exist_ok=True)
for name, frame, p in (("oof", train, oof), ("holdout", holdout, None), ("submission", test, None)):
    p = model.predict_proba(frame[cols])[:, 1] if p is None else p
    pd.DataFrame({"id": frame["id"], "y": p}).to_csv(f"output/{name}.csv", index=False)
"""


def _patients_task(root, patients: int = 400, visits: int = 4):
    """Patients seen ``visits`` times each on one day, in date order (so the holdout, the
    latest rows, holds whole patients); a patient's rows share its features (plus a little
    noise) and its label, which the features do not predict across patients."""
    rng = np.random.default_rng(0)
    centre, label = rng.normal(size=(patients, 2)), rng.integers(0, 2, patients)
    rows = [
        {"id": f"r{p * visits + v:05d}", "patient": f"p{p:04d}", "date": str((pd.Timestamp("2020-01-01") + pd.Timedelta(days=p)).date()),
         "f0": centre[p, 0] + rng.normal(scale=0.01), "f1": centre[p, 1] + rng.normal(scale=0.01), "y": int(label[p])}
        for p in range(patients) for v in range(visits)
    ]  # fmt: skip
    frame = pd.DataFrame(rows)
    n_test = len(frame) // 5
    train, test = frame.iloc[:-n_test], frame.iloc[-n_test:]  # the test rows are the latest patients
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "y": 0.5}).to_csv(root / "public" / "sample_submission.csv", index=False)
    test[["id", "y"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {"name": "patients", "task_type": "binary", "metric": "roc_auc", "id_column": "id",
            "target_columns": ["y"], "submission_columns": ["id", "y"], "positive_label": "1", "time_column": "date"}  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text("# patients\nSeveral visits per patient.\n")
    return root


def _flagged_and_kept_out(agent, scripts: int) -> tuple[list, list]:
    graph = agent.session.state.graph
    for i in range(scripts):
        agent.step(Action(Op.DRAFT, (), f"draft {i}"), timeout=60)
    nodes = [graph[f"n000{i}"] for i in range(1, scripts + 1)]
    assert all(n.score is not None and n.oof_score is not None for n in nodes), [(n.id, n.status) for n in nodes]
    return nodes, blend_members(graph, size=scripts)


def test_a_feature_derived_from_the_target_is_flagged_and_kept_out_of_the_blend(tmp_path):
    task = make_task(tmp_path / "t", n=2000)
    leaky_code, honest_code = "LEAKY = True\n" + TARGET_ENCODED, "LEAKY = False\n" + TARGET_ENCODED
    agent, _ = scripted_agent(task, tmp_path, [honest_code, leaky_code, honest_code])
    (honest, leaky, honest_too), members = _flagged_and_kept_out(agent, 3)
    assert leaky.oof_score > honest.oof_score + 0.2  # its own label in its feature
    assert "leaky_cv" in leaky.flags and not {"leaky_cv"} & {*honest.flags, *honest_too.flags}
    assert leaky.id not in members and honest.id in members


def test_groups_split_between_folds_are_flagged_and_kept_out_of_the_blend(tmp_path):
    task = _patients_task(tmp_path / "patients")
    leaky_code, honest_code = "LEAKY = True\n" + GROUPED, "LEAKY = False\n" + GROUPED
    agent, run = scripted_agent(task, tmp_path, [honest_code, leaky_code, honest_code])
    assert run.workspace.manifest()["split"]["kind"] == "time"  # whole patients in the holdout
    (honest, leaky, honest_too), members = _flagged_and_kept_out(agent, 3)
    assert leaky.oof_score > 0.95 and leaky.score < 0.7  # a sibling row found in every fold
    assert "leaky_cv" in leaky.flags and not {"leaky_cv"} & {*honest.flags, *honest_too.flags}
    assert leaky.id not in members and honest.id in members
