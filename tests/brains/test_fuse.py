"""The fuse operator: blend scripts for every prediction kind, the policy that picks members,
and the guarantee that blend weights come from out-of-fold predictions, never sealed labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_task

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.fuse import render_fuse
from mlguild.config import SearchConfig, load_config
from mlguild.core.graph import Node, SearchGraph
from mlguild.core.protocols import Action
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.search.blend import blend_members
from mlguild.search.greedy import GreedyPolicy
from mlguild.task.folder import TaskSpec, load_task

# ------------------------------------------------------------------ the blend script, per kind

N_TRAIN, N_HOLDOUT, N_TEST = 300, 60, 50


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(n)]


def _blend_case(tmp_path: Path, kind: str):
    """A data dir and four members' predictions: three informative with independent errors
    (a vote over labels needs three to beat its best member), one pure noise. Returns (task, node_dir, truth for the oof rows)."""
    rng = np.random.default_rng(0)
    n = N_TRAIN + N_HOLDOUT + N_TEST
    signal = rng.normal(size=n)
    spec = {"name": "blend", "id_column": "id", "target_columns": ["y"]}
    if kind == "value":
        spec.update(task_type="regression", metric="rmse", submission_columns=["id", "y"])
        target = (signal * 3 + 10).round(4)
    elif kind == "probability":
        spec.update(task_type="binary", metric="roc_auc", positive_label="yes", submission_columns=["id", "y"])
        target = np.where(signal + rng.normal(scale=0.7, size=n) > 0, "yes", "no")
    elif kind in ("label", "label_with_probabilities"):
        spec.update(task_type="multiclass", metric="accuracy", submission_columns=["id", "y"])
        target = np.digitize(signal, [-0.5, 0.5]).astype(str)
    else:
        spec.update(
            task_type="multiclass",
            metric="logloss",
            classes=["a", "b", "c"],
            submission_columns=["id", "p_a", "p_b", "p_c"],
        )
        target = np.array(["a", "b", "c"])[np.digitize(signal, [-0.5, 0.5])]
    task = TaskSpec(**spec).public_dict()
    ids = _ids("r", n)
    data = tmp_path / "data"
    data.mkdir()
    frame = pd.DataFrame({"id": ids, "x": signal, "y": target})
    train, holdout, test = (
        frame.iloc[:N_TRAIN],
        frame.iloc[N_TRAIN : N_TRAIN + N_HOLDOUT],
        frame.iloc[N_TRAIN + N_HOLDOUT :],
    )
    train.to_csv(data / "train.csv", index=False)
    holdout.drop(columns=["y"]).to_csv(data / "holdout.csv", index=False)
    test.drop(columns=["y"]).to_csv(data / "test.csv", index=False)

    def member(noise_scale: float, informative: bool, seed: int) -> pd.DataFrame:
        r = np.random.default_rng(seed)
        guess = (signal if informative else r.normal(size=n)) + r.normal(scale=noise_scale, size=n)
        if kind == "value":
            values = {"y": guess * 3 + 10}
        elif kind == "probability":
            values = {"y": 1 / (1 + np.exp(-2 * guess))}
        elif kind in ("label", "label_with_probabilities"):
            values = {"y": np.digitize(guess, [-0.5, 0.5]).astype(str)}
        else:
            centres = np.array([-1.0, 0.0, 1.0])
            logits = -((guess[:, None] - centres) ** 2) * 2
            proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
            values = {"p_a": proba[:, 0], "p_b": proba[:, 1], "p_c": proba[:, 2]}
        return pd.DataFrame({"id": ids, **values})

    node = tmp_path / "node"
    for name, (scale, informative, seed) in {
        "n1": (0.6, True, 1),
        "n2": (0.6, True, 2),
        "n3": (1.0, False, 3),
        "n4": (0.6, True, 4),
    }.items():
        out = member(scale, informative, seed)
        parent = node / "parents" / name
        parent.mkdir(parents=True)
        out.iloc[:N_TRAIN].to_csv(parent / "oof.csv", index=False)
        out.iloc[N_TRAIN : N_TRAIN + N_HOLDOUT].to_csv(parent / "holdout.csv", index=False)
        out.iloc[N_TRAIN + N_HOLDOUT :].to_csv(parent / "submission.csv", index=False)
        if kind == "label_with_probabilities":  # the scores behind the labels, as recipe scripts write them
            r = np.random.default_rng(seed)
            guess = signal + r.normal(scale=scale, size=n) if informative else r.normal(size=n)
            logits = -((guess[:, None] - np.array([-1.0, 0.0, 1.0])) ** 2) * 2
            proba = pd.DataFrame(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), columns=["0", "1", "2"])
            proba.insert(0, "id", ids)
            for part, rows in (
                ("oof", slice(0, N_TRAIN)),
                ("holdout", slice(N_TRAIN, N_TRAIN + N_HOLDOUT)),
                ("submission", slice(N_TRAIN + N_HOLDOUT, n)),
            ):
                proba.iloc[rows].to_csv(parent / f"proba_{part}.csv", index=False)
    return task, node, data


@pytest.mark.parametrize("kind", ["value", "probability", "label", "label_with_probabilities", "class_probabilities"])
def test_blend_script_weights_informative_members_and_writes_the_contract(tmp_path, kind):
    task, node, data = _blend_case(tmp_path, kind)
    code = render_fuse(task, ["n1", "n2", "n3", "n4"], "test blend")
    (node / "solution.py").write_text(code)
    env = {"PATH": os.environ.get("PATH", ""), "MLGUILD_DATA": str(data)}
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((node / "output" / "fuse_weights.json").read_text())
    weights = report["weights"]
    # The noise member gets the least weight, if any: a little of it can shrink a regression
    # toward the mean, and on 300 rows a coarse metric (accuracy) rewards some luck.
    assert weights["n3"] <= 0.2 and weights["n3"] < min(weights["n1"], weights["n2"], weights["n4"]), report
    assert weights["n1"] > 0 and weights["n2"] > 0 and weights["n4"] > 0, report  # independent errors: all help
    assert sum(weights.values()) == pytest.approx(1.0)
    scores = report["member_oof_scores"]
    best_member = max(scores.values()) if report["oof_metric"] in ("roc_auc", "accuracy") else min(scores.values())
    improved = (
        report["blend_oof_score"] >= best_member
        if report["oof_metric"] in ("roc_auc", "accuracy")
        else report["blend_oof_score"] <= best_member
    )
    assert improved, report
    for name, n_rows, ids in (("holdout.csv", N_HOLDOUT, "holdout.csv"), ("submission.csv", N_TEST, "test.csv")):
        out = pd.read_csv(node / "output" / name, dtype={"id": str})
        assert list(out.columns) == task["submission_columns"]
        assert out["id"].tolist() == pd.read_csv(data / ids, dtype={"id": str})["id"].tolist()
        assert len(out) == n_rows and not out.isna().any().any()
    if kind == "class_probabilities":
        sums = pd.read_csv(node / "output" / "submission.csv")[["p_a", "p_b", "p_c"]].sum(axis=1)
        assert np.allclose(sums, 1.0)


# ------------------------------------------------------------------ policy


def _node(graph: SearchGraph, op: str, score: float | None, parents=(), outputs=("oof",), flags=()) -> Node:
    node = graph.add(Node(id=graph.next_id(), op=op, parents=tuple(parents), iteration=len(graph)))
    node.status, node.score, node.outputs, node.flags = (
        ("scored" if score is not None else "crash"),
        score,
        list(outputs),
        list(flags),
    )
    return node


def test_blend_members_are_the_best_of_each_branch_once():
    graph = SearchGraph("maximize")
    a = _node(graph, "draft", 0.80)
    a2 = _node(graph, "improve", 0.84, parents=[a.id])
    b = _node(graph, "draft", 0.82)
    _node(graph, "draft", 0.90, outputs=())  # no oof.csv: cannot be blended
    _node(graph, "draft", 0.99, flags=("perfect_score",))  # a leak flag: never blended
    c = _node(graph, "draft", 0.70)
    assert blend_members(graph, size=5) == (a2.id, b.id, c.id)
    assert blend_members(graph, size=2) == (a2.id, b.id)
    blended = _node(graph, "blend", 0.86, parents=[a2.id, b.id, c.id])
    assert blended.branch == blended.id and blended.is_blend  # a blend starts its own branch
    assert blend_members(graph, size=5) == ()  # this set is blended already
    assert blend_members(graph, size=2) == (a2.id, b.id)  # a different set is not
    # A run recorded before blends had their own op: a fuse whose meta lists members.
    old = _node(graph, "fuse", 0.86, parents=[a2.id, b.id])
    old.meta["fuse"] = [a2.id, b.id]
    assert old.is_blend and blend_members(graph, size=2) == ()


def test_a_blend_comes_when_its_member_set_is_new_and_a_blend_is_never_improved():
    graph = SearchGraph("maximize")
    a, b = _node(graph, "draft", 0.80), _node(graph, "draft", 0.82)
    policy = GreedyPolicy(SearchConfig(num_drafts=2, draft_every=0, fuse_every=3))
    action = policy.select(graph, 2)
    assert (action.op, action.parents) == ("blend", (b.id, a.id))  # a new member set: blend now
    _node(graph, "blend", 0.95, parents=[b.id, a.id])
    action = policy.select(graph, 3)
    assert action.op == "improve" and action.parents == (b.id,)  # the best non-blend
    better_a = _node(graph, "improve", 0.90, parents=[a.id])  # a's branch has a new best: a new set
    assert policy.select(graph, 4).op == "improve"  # ... but only 1 node since the last blend
    _node(graph, "improve", 0.81, parents=[b.id])
    assert policy.select(graph, 5).op == "improve"  # 2 nodes since
    _node(graph, "improve", 0.80, parents=[b.id])
    action = policy.select(graph, 6)
    assert (action.op, action.parents) == ("blend", (better_a.id, b.id))  # 3 nodes since, and new
    assert GreedyPolicy(SearchConfig(num_drafts=2, draft_every=0, fuse_every=0)).select(graph, 6).op == "improve"


# ------------------------------------------------------------------ sealed labels never shape weights


def _weights(run, node: Node) -> dict:
    return json.loads((run.node_dir(node.id) / "output" / "fuse_weights.json").read_text())["weights"]


def test_noise_in_the_sealed_holdout_labels_leaves_fused_weights_unchanged(tmp_path):
    task_dir = make_task(tmp_path / "task", n=600)
    sets = [
        "search.num_drafts=3",
        "search.draft_every=0",
        "search.fuse_every=0",
        "budget.iterations=3",
        "sandbox.script_timeout_s=120",
    ]
    cfg = load_config(None, sets)
    run = create_run(load_task(task_dir), cfg, tmp_path / "runs")
    sandbox = get_sandbox("auto")
    Agent(open_session(run, RecipeBrain(), sandbox)).run_loop()

    agent = Agent(open_session(run, RecipeBrain(), sandbox))
    members = tuple(n.id for n in agent.session.state.graph.ranked() if "oof" in n.outputs)
    assert len(members) == 3, [(n.id, n.status, n.outputs, n.failure) for n in agent.session.state.graph]
    first = agent.step(Action("blend", members), 120)
    assert first.ok, first.failure
    staged = run.node_dir(first.id) / "parents"
    assert sorted(p.name for p in staged.iterdir()) == sorted(members)

    # Replace the sealed holdout labels with noise: the harness now scores against them,
    # but a blend fitted without them must come out the same.
    answers = pd.read_csv(run.workspace.holdout_answers, dtype=str)
    rng = np.random.default_rng(1)
    answers["y"] = rng.integers(0, 2, size=len(answers)).astype(str)
    answers.to_csv(run.workspace.holdout_answers, index=False)
    noisy = Agent(open_session(run, RecipeBrain(), sandbox))
    second = noisy.step(Action("blend", members), 120)
    assert second.ok, second.failure
    assert _weights(run, second) == _weights(run, first)
    assert second.score != first.score  # the noise did reach the harness's scoring

    # A parent's output that is a link (to the sealed labels, say) is never staged.
    link = run.node_dir(members[0]) / "output" / "oof.csv"
    link.unlink()
    link.symlink_to(run.workspace.holdout_answers)
    third = noisy.step(Action("blend", members), 120)
    assert not (run.node_dir(third.id) / "parents" / members[0] / "oof.csv").exists()
    assert _weights(run, third).keys() == set(members[1:])


def test_a_blend_rerun_with_only_one_member_copies_it(tmp_path):
    # The final refit reruns a blend with only the members it weighted: possibly just one.
    import shutil

    task, node, data = _blend_case(tmp_path, "probability")
    for gone in ("n2", "n3", "n4"):
        shutil.rmtree(node / "parents" / gone)
    (node / "solution.py").write_text(render_fuse(task, ["n1", "n2", "n3", "n4"], "rerun"))
    env = {"PATH": os.environ.get("PATH", ""), "MLGUILD_DATA": str(data)}
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((node / "output" / "fuse_weights.json").read_text())["weights"] == {"n1": 1.0}
    mine = pd.read_csv(node / "output" / "submission.csv")
    theirs = pd.read_csv(node / "parents" / "n1" / "submission.csv")
    assert np.allclose(mine["y"], theirs["y"])
