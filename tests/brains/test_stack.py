"""The blend's two ensembles: greedy ensemble selection (Caruana) and a level-2 stacker,
each cross-validated, the better on out-of-fold rows predicting; and what a refit of a
stack reruns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from mlguild.brains.recipes.fuse import render_fuse
from mlguild.core.graph import Node, SearchGraph
from mlguild.run.refit import refit_chain
from mlguild.task.folder import TaskSpec

TASK = TaskSpec(
    name="stack",
    id_column="id",
    target_columns=["y"],
    task_type="binary",
    metric="roc_auc",
    positive_label="yes",
    submission_columns=["id", "y"],
).public_dict()


def _case(tmp_path: Path, labels: np.ndarray, features: dict, members: dict, n_train: int) -> tuple[Path, Path]:
    """A data dir (train rows first, then holdout, then test, in equal thirds of the rest) and
    a blend node whose parents/ hold ``members``' probabilities for every row."""
    n = len(labels)
    ids = [f"r{i:05d}" for i in range(n)]
    frame = pd.DataFrame({"id": ids, **features, "y": labels})
    cut = n_train + (n - n_train) // 2
    data, node = tmp_path / "data", tmp_path / "node"
    data.mkdir()
    frame.iloc[:n_train].to_csv(data / "train.csv", index=False)
    frame.iloc[n_train:cut].drop(columns=["y"]).to_csv(data / "holdout.csv", index=False)
    frame.iloc[cut:].drop(columns=["y"]).to_csv(data / "test.csv", index=False)
    for name, values in members.items():
        parent = node / "parents" / name
        parent.mkdir(parents=True)
        out = pd.DataFrame({"id": ids, "y": values})
        out.iloc[:n_train].to_csv(parent / "oof.csv", index=False)
        out.iloc[n_train:cut].to_csv(parent / "holdout.csv", index=False)
        out.iloc[cut:].to_csv(parent / "submission.csv", index=False)
    return data, node


def _blend(data: Path, node: Path, members: list[str], stack: bool) -> dict:
    (node / "solution.py").write_text(render_fuse(TASK, members, "test blend", stack=stack))
    env = {"PATH": os.environ.get("PATH", ""), "MLGUILD_DATA": str(data), "MLGUILD_TIME_BUDGET": "600"}
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((node / "output" / "fuse_weights.json").read_text())


def _probability(score: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-score))


@pytest.mark.parametrize("case", ["complementary", "one_good"])
def test_selection_weights_the_right_members_and_never_loses_to_the_best_one(tmp_path, case):
    rng = np.random.default_rng(1)
    n = 2500
    signal = rng.normal(size=n)
    labels = np.where(signal + rng.normal(scale=0.5, size=n) > 0, "yes", "no")
    good = signal + rng.normal(scale=0.8, size=n)
    members = {"good": _probability(good)}
    if case == "complementary":  # a second informative member with its own errors, and a near copy of the first
        members["other"] = _probability(signal + rng.normal(scale=0.8, size=n))
        members["copy"] = _probability(good + rng.normal(scale=0.05, size=n))
    members["noise"] = _probability(rng.normal(size=n))
    members["noise2"] = _probability(rng.normal(size=n))
    data, node = _case(tmp_path, labels, {"x": rng.normal(size=n)}, members, n_train=2000)
    report = _blend(data, node, list(members), stack=False)
    weights, alone = report["weights"], report["member_oof_scores"]
    assert report["method"] == "selection" and report["cross_validated_scores"] == {}
    # Noise earns at most a crumb of weight (a lucky step on these rows), the informative members the rest.
    assert weights["noise"] + weights["noise2"] <= 0.1, weights
    assert report["blend_oof_score"] >= max(alone.values())  # never worse than the best member alone
    if case == "complementary":
        assert weights["good"] + weights["copy"] > 0.25 and weights["other"] > 0.25, weights
        assert report["blend_oof_score"] > max(alone.values()) + 0.005  # independent errors: the blend is better
        assert report["members_used"] == [m for m in members if weights[m] > 0]
    else:
        assert weights["good"] >= 0.9 and "good" in report["members_used"], weights


def _stacker_params() -> dict:
    return dict(n_estimators=300, learning_rate=0.03, num_leaves=15, min_child_samples=20, verbose=-1, n_jobs=1)


@pytest.mark.slow
def test_the_stackers_out_of_fold_score_never_sees_its_own_folds_labels(tmp_path):
    """Labels that are pure noise: nothing can predict them, so an honest out-of-fold score is
    at chance, while a stacker that saw the rows it predicts learns the noise and looks good."""
    rng = np.random.default_rng(7)
    n_train, n = 600, 800
    labels = rng.choice(["yes", "no"], size=n)
    features = {f"x{i}": rng.normal(size=n) for i in range(20)}
    features["colour"] = rng.choice(["red", "green", "blue"], size=n)
    members = {f"m{i}": rng.uniform(size=n) for i in range(3)}
    data, node = _case(tmp_path, labels, features, members, n_train)
    report = _blend(data, node, list(members), stack=True)
    honest = report["cross_validated_scores"]
    assert {"selection", "stack_linear", "stack_lgbm"} <= set(honest), report
    for name, score in honest.items():
        assert abs(score - 0.5) < 0.08, (name, score)
    oof = pd.read_csv(node / "output" / "oof.csv")
    assert abs(roc_auc_score(labels[:n_train] == "yes", oof["y"]) - 0.5) < 0.08  # whichever ensemble predicts
    # The leaky version: the same kind of stacker scored on the rows it trained on.
    import lightgbm as lgb

    x = np.column_stack([*members.values(), *(v for k, v in features.items() if k != "colour")])[:n_train]
    leaky = lgb.LGBMClassifier(**_stacker_params()).fit(x, labels[:n_train] == "yes")
    assert roc_auc_score(labels[:n_train] == "yes", leaky.predict_proba(x)[:, 1]) > 0.75


@pytest.mark.slow
def test_a_stacker_that_reads_the_original_features_beats_the_selection_and_predicts(tmp_path):
    """The members saw only part of the signal; a feature carries the rest. The stacker on
    their predictions and the features learns it, cross-validates better than the selection,
    and its holdout predictions beat every member's."""
    rng = np.random.default_rng(3)
    n_train, n = 600, 900
    seen, unseen = rng.normal(size=n), rng.normal(size=n)
    labels = np.where(seen + 1.5 * unseen + rng.normal(scale=0.3, size=n) > 0, "yes", "no")
    members = {f"m{i}": _probability(seen + rng.normal(scale=0.5, size=n)) for i in range(3)}
    data, node = _case(tmp_path, labels, {"unseen": unseen, "other": rng.normal(size=n)}, members, n_train)
    report = _blend(data, node, list(members), stack=True)
    honest = report["cross_validated_scores"]
    assert report["method"] == "stack_lgbm" and honest["stack_lgbm"] > honest["selection"] + 0.05, report
    assert report["members_used"] == list(members)  # a stacker reads every member: its refit refits them all
    holdout = pd.read_csv(node / "output" / "holdout.csv")
    truth = labels[n_train : n_train + len(holdout)] == "yes"
    best_member = max(roc_auc_score(truth, v[n_train : n_train + len(holdout)]) for v in members.values())
    assert roc_auc_score(truth, holdout["y"]) > best_member + 0.05


def test_a_stacks_refit_reruns_every_member_it_read(tmp_path):
    graph = SearchGraph("maximize")
    for i in range(3):
        graph.add(Node(id=f"n{i + 1:04d}", op="draft", parents=(), iteration=i))
    blend = graph.add(Node(id="n0004", op="blend", parents=("n0001", "n0002", "n0003"), iteration=3))
    run = SimpleNamespace(node_dir=lambda node_id: tmp_path / node_id)
    out = tmp_path / blend.id / "output"
    out.mkdir(parents=True)
    weights = {"n0001": 1.0, "n0002": 0.0, "n0003": 0.0}
    report = {"weights": weights, "method": "stack_lgbm", "members_used": ["n0001", "n0002", "n0003"]}
    (out / "fuse_weights.json").write_text(json.dumps(report))
    assert [n.id for n in refit_chain(graph, blend, run)] == ["n0001", "n0002", "n0003", "n0004"]  # type: ignore[arg-type]
    report.update(method="selection", members_used=["n0001"])
    (out / "fuse_weights.json").write_text(json.dumps(report))
    assert [n.id for n in refit_chain(graph, blend, run)] == ["n0001", "n0004"]  # type: ignore[arg-type]
    del report["members_used"]  # a blend written before stacks: the members weighted above 0
    (out / "fuse_weights.json").write_text(json.dumps(report))
    assert [n.id for n in refit_chain(graph, blend, run)] == ["n0001", "n0004"]  # type: ignore[arg-type]


def test_an_improve_prompt_shows_a_members_weight_only_where_the_selection_predicted(tmp_path):
    from mlguild.run.evidence import Evidence

    graph = SearchGraph("maximize")
    member = graph.add(Node(id="n0001", op="draft", parents=(), iteration=0))
    graph.add(Node(id="n0002", op="draft", parents=(), iteration=1))
    blend = graph.add(Node(id="n0003", op="blend", parents=("n0001", "n0002"), iteration=2))
    blend.status, blend.score, blend.meta["fuse"] = "scored", 0.9, ["n0001", "n0002"]
    out = tmp_path / blend.id / "output"
    out.mkdir(parents=True)
    evidence = Evidence(SimpleNamespace(node_dir=lambda node_id: tmp_path / node_id, spec=None))  # type: ignore[arg-type]
    report = {"weights": {"n0001": 0.75, "n0002": 0.25}, "method": "selection"}
    (out / "fuse_weights.json").write_text(json.dumps(report))
    assert "with weight 0.75" in "\n".join(evidence.blend(graph, member))
    report["method"] = "stack_lgbm"  # the stacker predicted: the selection's weights say nothing of its use
    (out / "fuse_weights.json").write_text(json.dumps(report))
    text = "\n".join(evidence.blend(graph, member))
    assert "It feeds the blend n0003 (members" in text and "weight" not in text.split("(members")[0]
