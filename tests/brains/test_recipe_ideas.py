"""The recipe brain acts on the community's ideas (mlguild.brains.recipes.ideas): an idea that
names a technique the recipes have becomes a prior on that move or family, so it is tried
early, and the node cites the idea; an idea no recipe can act on changes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import Workspace, draft_of, make_task

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.catalog import DRAFT_ORDER
from mlguild.brains.recipes.ideas import idea_hints, named_techniques
from mlguild.config import load_config
from mlguild.core.protocols import Action, ParentView
from mlguild.memory import MovePrior
from mlguild.pools import fill_run_ideas
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task
from mlguild.task.knowledge import add_items

IDEAS = (
    "[icat001] Use CatBoost, its ordered boosting copes with the categories (notebook by a expert author, 40 votes)",
    "[ilog001] Log-transform the sale price before fitting (post by a master author, 12 votes); tried here: n3 gain",
    "[inone01] Stack a pretrained vision model on the photos (post by a novice author, 1 votes)",
)


@pytest.fixture(scope="module")
def houses(tmp_path_factory):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    area = rng.uniform(50, 300, 400)
    frame = pd.DataFrame(
        {
            "id": range(400),
            "area": area,
            "rooms": rng.integers(1, 8, 400),
            "town": rng.choice(["a", "b", "c"], 400),
            "price": np.exp(10 + area / 150 + rng.normal(scale=0.3, size=400)).round(0),
        }
    )
    return Workspace(
        tmp_path_factory.mktemp("houses"),
        frame,
        name="houses",
        task_type="regression",
        metric="rmse",
        id_column="id",
        target_columns=["price"],
        submission_columns=["id", "price"],
    )


def test_the_vocabulary_reads_what_an_idea_names_and_not_its_signals():
    assert named_techniques("Log-transform the target, then fit LightGBM") == ["log_target", "lightgbm"]
    assert named_techniques("target encoding of the zip code inside each fold") == ["target_encoding"]
    assert named_techniques("Pseudo-label the test set") == []
    hints = idea_hints(IDEAS)
    assert hints["catboost"][0] == "icat001" and hints["log_target"][0] == "ilog001"
    assert set(hints) == {"catboost", "log_target"}  # "expert author, 40 votes" names nothing
    assert "tried here" not in hints["log_target"][1] and "votes" not in hints["catboost"][1]


def test_an_idea_naming_a_family_drafts_it_first_and_the_draft_cites_it(houses):
    brain = RecipeBrain()
    plain = brain.propose(Action("draft"), houses.context())
    assert plain.meta["recipe"] == DRAFT_ORDER["tabular"][0] != "catboost" and "ideas" not in plain.meta
    hinted = brain.propose(Action("draft"), replace(houses.context(), ideas=IDEAS))
    assert hinted.meta["recipe"] == "catboost" and hinted.meta["ideas"] == ["icat001"]
    assert "**From the community:** [icat001] Use CatBoost" in hinted.plan


def test_an_idea_naming_a_move_is_tried_first_on_an_improve_and_cited(houses):
    parent_draft = draft_of(houses, "lightgbm")
    parent = ParentView("p", "draft", parent_draft.plan, parent_draft.code, "scored", 1000.0, meta=parent_draft.meta)
    assert not parent.meta["features"]["log_target"]
    brain = RecipeBrain()
    picks = set()
    for seed in range(6):  # without the idea, the seeded draw spreads over the untried moves
        plain = brain.propose(Action("improve", ("p",)), replace(houses.context([parent]), seed=seed))
        picks.add(plain.meta["move"])
        hinted = brain.propose(Action("improve", ("p",)), replace(houses.context([parent]), seed=seed, ideas=IDEAS))
        assert "log_target" in hinted.meta["move"].split("+"), hinted.meta["move"]
        assert hinted.meta["ideas"] == ["ilog001"] and "[ilog001] Log-transform the sale price" in hinted.plan
        assert "a community idea that names it" in hinted.plan
    assert len(picks) > 1


def test_what_the_memory_measured_outweighs_an_idea(houses):
    """A move the memory saw hurt on similar tasks keeps its measured prior: the idea adds nothing."""
    parent_draft = draft_of(houses, "lightgbm")
    parent = ParentView("p", "draft", parent_draft.plan, parent_draft.code, "scored", 1000.0, meta=parent_draft.meta)
    hurt = {"log_target": MovePrior(weight=3.0, gain=-2.0, log_cost=0.0, cost_weight=3.0)}
    context = replace(houses.context([parent]), ideas=IDEAS, move_priors=hurt)
    proposal = RecipeBrain().propose(Action("improve", ("p",)), context)
    assert "log_target" not in proposal.meta["move"].split("+") and "ideas" not in proposal.meta


def test_a_knowledge_item_naming_a_family_leads_a_run_and_its_outcome_goes_back_to_the_idea(tmp_path):
    task = make_task(tmp_path / "t")
    post = tmp_path / "catboost.md"
    post.write_text(
        "---\ntitle: What worked\nauthor_tier: master\nvotes: 80\ndate: 2024-01-01\n---\n"
        "CatBoost with default settings beat everything else we tried on this data.\n"
    )
    add_items(task, [post], None)
    cfg = load_config(None, ["budget.iterations=1", "sandbox.script_timeout_s=120", "brain.eda=false"])
    run = create_run(load_task(task), cfg, tmp_path / "runs")
    agent = Agent(open_session(run, RecipeBrain(), get_sandbox("local")))
    assert fill_run_ideas(run, agent.session.pools, None) is not None  # read by rules
    (idea,) = [i for i in agent.session.pools.ideas.all() if "CatBoost" in i.text]
    agent.run_loop()
    (node,) = list(agent.session.state.graph)
    assert node.meta["recipe"] == "catboost" and node.meta["ideas"] == [idea.id], node.meta
    assert [t.node for t in agent.session.pools.ideas.get(idea.id).trials] == [node.id]
    agent.session.close()
    run.close()
