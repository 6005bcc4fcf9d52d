"""Node titles: one line per node, from the brain or from its plan, journaled and replayed."""

from __future__ import annotations

from conftest import scripted_agent

from mlguild.journal import Journal, read_journal
from mlguild.metrics import get_metric
from mlguild.records import record_started
from mlguild.search.graph import Node
from mlguild.state import replay
from mlguild.titles import LIMIT, title_of


def test_a_plan_gives_its_title_line_else_its_heading_else_its_first_line():
    assert (
        title_of("Some intro\n**Title:** LightGBM with target encoding\n## Plan\n...")
        == "LightGBM with target encoding"
    )
    assert title_of("\n## Improve: more trees (`LightGBM`)\n\nbody") == "Improve: more trees (LightGBM)"
    assert title_of("  a plain plan, one line  \nmore") == "a plain plan, one line"
    assert title_of("") == ""
    long = title_of("# " + "word " * 40)
    assert len(long) == LIMIT and long.endswith("…")


def test_titles_are_journaled_with_each_node_and_replayed(small_task, tmp_path):
    from mlguild.brains.scripted import PRIOR_SCRIPT

    code = PRIOR_SCRIPT.format(shrink=0.3)
    agent, run = scripted_agent(small_task, tmp_path, [code], **{"budget.iterations": 2})
    agent.run_loop()
    records = read_journal(run.path / "journal.jsonl")
    started = [r["node"] for r in records if r["type"] == "node_started"]
    assert started[0]["title"] == "plan 0"  # a proposal without a title: from its plan
    assert started[1]["title"].startswith("Draft: prior predictor")  # the scripted brain's own
    assert all(n["worker"] == 1 for n in started)
    state = replay(records, get_metric("roc_auc").direction)
    assert [n.title for n in state.graph][:2] == [started[0]["title"], started[1]["title"]]


def test_a_run_from_before_titles_gets_them_from_its_plans(tmp_path):
    with Journal(tmp_path / "journal.jsonl") as journal:
        node = Node(id="n0001", op="draft", parents=(), iteration=0, plan="## Draft: ridge regression\n\nwhy")
        record_started(journal, node)
    records = read_journal(tmp_path / "journal.jsonl")
    del records[0]["node"]["title"]  # as an older version wrote it
    state = replay(records, get_metric("rmse").direction)
    assert state.graph["n0001"].title == "Draft: ridge regression"


def test_the_recipe_brain_titles_its_proposals_from_their_heading(small_task, tmp_path):
    from mlguild.brains.recipes import RecipeBrain
    from mlguild.protocols import Action

    agent, _ = scripted_agent(small_task, tmp_path, [])
    context = agent.contexts.build(agent.state.graph, Action("draft"), 0, 60.0)
    proposal = RecipeBrain().propose(Action("draft"), context)
    assert proposal.title and proposal.title == title_of(proposal.plan)
    assert proposal.title.startswith("Draft")
