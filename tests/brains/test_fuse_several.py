"""The blend of several target columns: its weights are fitted per column, on out-of-fold
predictions, so a member that is good on one target and noise on another counts only where it helps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlguild.brains.recipes.fuse import render_fuse
from mlguild.metrics import get_metric
from mlguild.task.folder import TaskSpec

N_TRAIN, N_HOLDOUT, N_TEST = 300, 60, 50
TARGETS = ["a", "b"]


def _case(tmp_path: Path, kind: str):
    """Two targets and three members: n1 knows target a (noise on b), n2 knows b (noise on a),
    n3 knows both a little."""
    rng = np.random.default_rng(0)
    n = N_TRAIN + N_HOLDOUT + N_TEST
    signal = rng.normal(size=(n, 2))
    spec: dict = {"name": "blend", "id_column": "id", "target_columns": TARGETS, "submission_columns": ["id", *TARGETS]}
    if kind == "value":
        spec.update(task_type="regression", metric="mcrmse")
        truth = (signal * 3 + 10).round(4)
    else:
        metric = "mean_columnwise_roc_auc" if kind == "probability" else "multilabel_f1_macro"
        spec.update(task_type="binary", metric=metric, positive_label="1")
        truth = (signal + rng.normal(scale=0.5, size=(n, 2)) > 0.3).astype(int)
    task = TaskSpec(**spec).public_dict()
    ids = [f"r{i:04d}" for i in range(n)]
    data = tmp_path / "data"
    data.mkdir()
    frame = pd.DataFrame({"id": ids, "x": signal[:, 0], "a": truth[:, 0], "b": truth[:, 1]})
    frame.iloc[:N_TRAIN].to_csv(data / "train.csv", index=False)
    frame.iloc[N_TRAIN : N_TRAIN + N_HOLDOUT].drop(columns=TARGETS).to_csv(data / "holdout.csv", index=False)
    frame.iloc[N_TRAIN + N_HOLDOUT :].drop(columns=TARGETS).to_csv(data / "test.csv", index=False)
    node = tmp_path / "node"
    knows = {"n1": (0.3, 3.0), "n2": (3.0, 0.3), "n3": (1.0, 1.0)}  # noise per target
    for seed, (name, noise) in enumerate(knows.items()):
        r = np.random.default_rng(seed + 1)
        guess = signal + r.normal(size=(n, 2)) * np.array(noise)
        if kind == "value":
            values = guess * 3 + 10
        else:
            values = 1 / (1 + np.exp(-2 * guess))
        out = pd.DataFrame({"id": ids, "a": values[:, 0], "b": values[:, 1]})
        parent = node / "parents" / name
        parent.mkdir(parents=True)
        parts = {
            "oof": slice(0, N_TRAIN),
            "holdout": slice(N_TRAIN, N_TRAIN + N_HOLDOUT),
            "submission": slice(N_TRAIN + N_HOLDOUT, n),
        }
        for part, rows in parts.items():
            if kind == "label":  # labels in the submission files, probabilities beside them
                out.iloc[rows].to_csv(parent / f"proba_{part}.csv", index=False)
                labels = out.iloc[rows].assign(
                    a=(out["a"].iloc[rows] > 0.5).astype(int), b=(out["b"].iloc[rows] > 0.5).astype(int)
                )
                labels.to_csv(parent / f"{part}.csv", index=False)
            else:
                out.iloc[rows].to_csv(parent / f"{part}.csv", index=False)
    return task, node, data


@pytest.mark.parametrize("kind", ["value", "probability", "label"])
def test_blend_weights_are_fitted_per_target_column(tmp_path, kind):
    task, node, data = _case(tmp_path, kind)
    code = render_fuse(task, ["n1", "n2", "n3"], "test blend")
    (node / "solution.py").write_text(code)
    env = {"PATH": os.environ.get("PATH", ""), "MLGUILD_DATA": str(data)}
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((node / "output" / "fuse_weights.json").read_text())
    columns = report["column_weights"]
    # the member that knows a target carries it; the one that is noise there gets least
    assert columns["a"]["n1"] > 0.5 and columns["a"]["n2"] < columns["a"]["n1"], report
    assert columns["b"]["n2"] > 0.5 and columns["b"]["n1"] < columns["b"]["n2"], report
    for column in columns.values():
        assert sum(column.values()) == pytest.approx(1.0)
    # a member is kept for the refit when any column weights it
    assert report["weights"] == {m: max(columns["a"][m], columns["b"][m]) for m in ("n1", "n2", "n3")}
    for name, source in (("holdout.csv", "holdout.csv"), ("submission.csv", "test.csv")):
        out = pd.read_csv(node / "output" / name, dtype={"id": str})
        assert list(out.columns) == task["submission_columns"]
        assert out["id"].tolist() == pd.read_csv(data / source, dtype={"id": str})["id"].tolist()
        assert not out.isna().any().any()
    # the blend beats every member on the out-of-fold rows, scored by the task's own metric
    metric = get_metric(task["metric"])
    train = pd.read_csv(data / "train.csv", dtype=str).set_index("id")
    blend = pd.read_csv(node / "output" / "oof.csv", dtype=str).set_index("id")

    def score(frame: pd.DataFrame) -> float:
        truth = train.loc[frame.index, TARGETS]
        if metric.prediction == "label":
            return metric(truth.to_numpy(), frame[TARGETS].to_numpy(), positive_label="1")
        truth_values = truth.to_numpy(dtype=float)
        return metric(truth_values, frame[TARGETS].to_numpy(dtype=float))

    blended = score(blend)
    for member in ("n1", "n2", "n3"):
        alone = score(pd.read_csv(node / "parents" / member / "oof.csv", dtype=str).set_index("id"))
        assert (blended > alone) if metric.direction == "maximize" else (blended < alone), (member, blended, alone)
