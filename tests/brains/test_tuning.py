"""Tuning: tune probes search a boosted recipe's main parameters at once, mirror a probe that
lost, shrink their step as probes stop gaining, start from the memory's configurations, and
keep a run improving where the single moves are used up."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import pytest
from conftest import ames_workspace
from conftest import draft_of as _draft

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.catalog import RECIPES
from mlguild.brains.recipes.moves import Facts, applicable
from mlguild.brains.recipes.recipe import recipe_meta
from mlguild.brains.recipes.tuning import DIMS, MAX_PROBES, MIN_STEP, SHRINK, STEP, TUNE, _step, probe, tunable
from mlguild.core.protocols import Action, HistoryItem, ParentView
from mlguild.memory.experience import Experience, TaskTraits
from mlguild.memory.priors import family_configs


@pytest.fixture(scope="module")
def ames(tmp_path_factory):
    return ames_workspace(tmp_path_factory.mktemp("ames"), 400, "rmsle")


def _parent(meta, score=0.20):
    return HistoryItem("p", "draft", "scored", score, meta, 10.0)


def _child(node_id, tuned, score, parent="p"):
    meta = {**tuned, "move": TUNE, "parent": parent}
    return HistoryItem(node_id, "improve", "scored" if score is not None else "crash", score, meta, 10.0)


def _probe(ws, meta, history, seed=0, parent="p", score=0.20, **context):
    ctx = dataclasses.replace(ws.context(history=history), **context)
    return probe(recipe_meta(meta), RECIPES[meta["recipe"]], parent, score, ctx, random.Random(seed))


def test_a_probe_moves_every_main_parameter_within_its_range(ames):
    for family in ("lightgbm", "xgboost", "catboost", "hist_gb"):
        meta = _draft(ames, family).meta
        names = tunable(recipe_meta(meta), RECIPES[family])
        assert len(names) >= 3, family
        tuned = _probe(ames, meta, [_parent(meta)])
        assert tuned is not None and tuned["tune"]["source"] == "random"
        assert tuned["tune"]["step"] == pytest.approx(STEP)
        moved = [n for n in names if tuned["params"][n] != meta["params"][n]]
        assert len(moved) >= 2, (family, moved)
        for name in names:
            dim = DIMS[name]
            assert dim.low <= tuned["params"][name] <= dim.high
            assert isinstance(tuned["params"][name], int) == dim.integer
    # Recipes without a learning rate, or with too few of the parameters, are left to the moves.
    for family in ("linear", "random_forest"):
        assert _probe(ames, _draft(ames, family).meta, []) is None


def test_a_probe_that_lost_is_mirrored_and_one_that_won_is_not(ames):
    meta = _draft(ames, "lightgbm").meta
    first = _probe(ames, meta, [_parent(meta)])
    lost = [_parent(meta, 0.20), _child("c1", first, 0.25)]  # RMSLE: higher is worse
    mirror = _probe(ames, meta, lost)
    assert mirror["tune"]["source"] == "mirror"
    assert mirror["tune"]["step"] == first["tune"]["step"]
    assert {n: -v for n, v in first["tune"]["direction"].items()} == mirror["tune"]["direction"]
    won = [_parent(meta, 0.20), _child("c1", first, 0.15)]
    assert _probe(ames, meta, won)["tune"]["source"] == "random"
    # A parent's probes are used up after MAX_PROBES.
    used = [_parent(meta)] + [_child(f"c{i}", first, 0.25) for i in range(MAX_PROBES)]
    assert _probe(ames, meta, used) is None
    # A grow of a probe runs its script again with its meta on more rows: not another probe.
    grown = [_parent(meta)] + [dataclasses.replace(c, op="grow") for c in used[1:]]
    assert _probe(ames, meta, grown)["tune"]["source"] == "random"


def test_the_step_shrinks_as_probes_stop_gaining_and_grows_when_one_gains(ames):
    meta = _draft(ames, "lightgbm").meta
    first = _probe(ames, meta, [_parent(meta)])
    # Three probes from three other parents, none better than its parent.
    history = [_parent(meta)]
    for i in range(3):
        history += [HistoryItem(f"q{i}", "draft", "scored", 0.20, meta, 10.0), _child(f"c{i}", first, 0.30, f"q{i}")]
    assert _probe(ames, meta, history)["tune"]["step"] == pytest.approx(STEP * SHRINK**3)
    history += [HistoryItem("q9", "draft", "scored", 0.20, meta, 10.0), _child("c9", first, 0.10, "q9")]
    assert _probe(ames, meta, history)["tune"]["step"] == pytest.approx(STEP * SHRINK**2)
    many = [_parent(meta)] + [_child(f"c{i}", first, 0.30, "p") for i in range(40)]
    assert _step(tuple(many), "lightgbm", "minimize") == pytest.approx(MIN_STEP)


def test_a_smaller_learning_rate_gets_more_rounds(ames):
    meta = _draft(ames, "lightgbm").meta
    for seed in range(20):
        tuned = _probe(ames, meta, [_parent(meta)], seed=seed)
        before, after = meta["params"]["learning_rate"], tuned["params"]["learning_rate"]
        rounds = tuned["params"]["n_estimators"]
        if after < before:
            assert rounds == math.ceil(meta["params"]["n_estimators"] * before / after)
        else:
            assert rounds == meta["params"]["n_estimators"]


def _traits(rows=400):
    return TaskTraits("regression", "rmsle", rows, 70, "tabular", 0.0, 20)


def _record(run, node, recipe, score, params, rows=400):
    traits = _traits(rows)
    config = {"recipe": recipe, "params": params, "features": {}, "run": {}}
    return Experience(
        run, "other", node, "improve", "scored", "gain", "", "", "", recipe, "", score, "", None, None, None, 1.0,
        traits, config,
    )  # fmt: skip


def test_the_first_probe_heads_for_the_configurations_of_similar_tasks(ames):
    meta = _draft(ames, "lightgbm").meta
    remembered = dict(meta["params"], learning_rate=0.02, num_leaves=15, min_child_samples=40, reg_lambda=5.0)
    worse = dict(meta["params"], learning_rate=0.2, num_leaves=200)
    traits = _traits()
    records = [_record("r1", "n1", "lightgbm", 0.12, remembered), _record("r1", "n2", "lightgbm", 0.30, worse)]
    configs = family_configs(records, traits, max_distance=1.0)
    assert configs == {"lightgbm": ((1.0, remembered),)}  # the run's best node of the family, not its worse one
    assert family_configs(records, dataclasses.replace(traits, task_type="binary", metric="auc"), 0.1) == {}

    tuned = _probe(ames, meta, [_parent(meta)], family_configs=configs)
    assert tuned["tune"]["source"] == "memory"
    for name in tunable(recipe_meta(meta), RECIPES["lightgbm"]):
        assert tuned["params"][name] == pytest.approx(remembered[name], rel=1e-3), name
    # Once the family has a probe on this task, the memory has had its say.
    history = [_parent(meta), _child("c1", tuned, 0.19)]
    assert _probe(ames, meta, history, family_configs=configs)["tune"]["source"] == "random"


def test_improve_tunes_where_every_move_and_pair_was_tried(ames):
    draft = _draft(ames, "lightgbm")
    meta = recipe_meta(draft.meta)
    recipe = RECIPES["lightgbm"]
    names = [m.name for m in applicable(meta, recipe, Facts.of(ames.task, ames.profile))]
    tried = [*names, *("+".join(pair) for pair in itertools.combinations(names, 2))]
    history = [HistoryItem("a", "draft", "scored", 0.2, draft.meta, 10.0)] + [
        HistoryItem(f"c{i}", "improve", "scored", 0.21, {"brain": "recipes", "move": m, "parent": "a"}, 10.0)
        for i, m in enumerate(tried)
    ]
    parent = ParentView("a", "draft", draft.plan, draft.code, "scored", 0.2, meta=draft.meta)
    proposal = RecipeBrain().propose(Action("improve", ("a",)), ames.context([parent], history, iteration=len(history)))
    assert proposal.meta["move"] == TUNE and proposal.plan.startswith("## Improve: tune")
    assert proposal.meta["changed"] and proposal.meta["tune"]["source"] == "random"
    assert proposal.meta["tune"]["parent_score"] == 0.2 and "**Probe:** a random direction, step 0.3" in proposal.plan
    # The script says what the meta says, and it runs to a valid submission.
    assert repr(proposal.meta["params"]["num_leaves"]) in proposal.code
    ames.run(proposal.code, "tuned")
    # A later move from the tuned node is not a probe: the record of the probe stays with it.
    used = [
        HistoryItem(f"p{i}", "improve", "scored", 0.2, {"brain": "recipes", "move": TUNE, "parent": "t"}, 10.0)
        for i in range(MAX_PROBES)
    ]  # the tuned node's own probes used up, so the child is a move
    child = RecipeBrain().propose(
        Action("improve", ("t",)),
        ames.context(
            [ParentView("t", "improve", proposal.plan, proposal.code, "scored", 0.19, meta=proposal.meta)], used
        ),
    )
    assert child.meta["move"] != TUNE and "tune" not in child.meta


def test_a_failed_probe_is_undone_by_debug(ames):
    draft = _draft(ames, "lightgbm")
    tuned = _probe(ames, draft.meta, [_parent(draft.meta)])
    tuned.update(
        move=TUNE,
        parent="p",
        changed={
            f"params.{k}": [draft.meta["params"][k], v]
            for k, v in tuned["params"].items()
            if draft.meta["params"].get(k) != v
        },
    )
    failed = ParentView("t", "improve", "", "", "crash", None, "ValueError: bad parameter", meta=tuned)
    fixed = RecipeBrain().propose(Action("debug", ("t",)), ames.context([failed]))
    assert fixed.meta["move"] == f"undo_{TUNE}" and "tune" not in fixed.meta
    assert fixed.meta["params"] == draft.meta["params"]


def test_family_configs_keep_the_nearest_runs_first():
    traits = _traits()
    records = [
        _record("far", "n1", "xgboost", 0.1, {"max_depth": 4}, rows=100_000),
        _record("near", "n1", "xgboost", 0.2, {"max_depth": 8}),
    ]
    configs = family_configs(records, traits, max_distance=10.0)["xgboost"]
    assert [params["max_depth"] for _, params in configs] == [8, 4]
    assert configs[0][0] == 1.0 > configs[1][0] > 0
