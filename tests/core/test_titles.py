"""Node titles: one line per node, from the brain or from its plan, journaled and replayed."""

from __future__ import annotations

from conftest import scripted_agent

from mlguild.core.graph import Node
from mlguild.core.titles import LIMIT, title_of
from mlguild.metrics import get_metric
from mlguild.rundir.journal import Journal, read_journal
from mlguild.rundir.records import record_started
from mlguild.rundir.replay import replay


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
    from mlguild.core.protocols import Action
    from mlguild.core.vocabulary import Op

    agent, _ = scripted_agent(small_task, tmp_path, [])
    context = agent.session.contexts.build(agent.session.state.graph, Action(Op.DRAFT), 0, 60.0)
    proposal = RecipeBrain().propose(Action(Op.DRAFT), context)
    assert proposal.title and proposal.title == title_of(proposal.plan)
    assert proposal.title.startswith("Draft")


def test_the_llm_brain_asks_for_a_title_line_and_keeps_it(tmp_path):
    from conftest import GOOD, llm_agent

    from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
    from mlguild.llm import ScriptedLLM

    titled = f"Title: a logistic curve on x0\n\nPlan: the curve, because x0 carries the signal.\n```python\n{GOOD}```\n"
    headed = f"## Curve fit, steeper\n\nPlan: a steeper curve.\n```python\n{GOOD}```\n"
    llm = ScriptedLLM([titled], default=headed)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 2})
    agent.run_loop()
    assert "Title: <what this script does" in llm.calls[0]["messages"][-1].content  # the prompt asks
    started = [r["node"] for r in read_journal(run.path / "journal.jsonl") if r["type"] == "node_started"]
    assert [n["title"] for n in started[:2]] == ["a logistic curve on x0", "Curve fit, steeper"]


def test_a_final_refit_is_titled_too(small_task, tmp_path):
    from mlguild.brains.scripted import PRIOR_SCRIPT
    from mlguild.final.stage import finish

    agent, run = scripted_agent(small_task, tmp_path, [PRIOR_SCRIPT.format(shrink=0.3)], **{"budget.iterations": 1})
    finish(agent.session, agent.run_loop())
    records = read_journal(run.path / "journal.jsonl")
    refits = [r["node"] for r in records if r["type"] == "node_started" and r["node"]["op"] == "refit"]
    assert refits and all(n["title"].startswith("Refit of n0001") for n in refits)
