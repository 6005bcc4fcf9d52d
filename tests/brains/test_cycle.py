"""The community cycle (mlguild.brains.llm.cycle): select ideas, draft, implement in an isolated
context with a step-bounded run-observe-fix loop inside one node, report with novelty."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import CRASH, GOOD, llm_agent, make_task

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.brains.llm.cycle import novel_components
from mlguild.llm import ScriptedLLM
from mlguild.pools import fill_run_ideas
from mlguild.task.knowledge import Item, store_items

POST = Item(
    "",
    "post",
    "What worked",
    "someone",
    "grandmaster",
    300,
    0.91,
    "2021-01-01",
    "fixture://post",
    "A logistic model on the x0 feature is a strong baseline.",
)


def _draft(idea_id: str) -> str:
    return (
        "Draft: a logistic curve on x0 with a steeper slope.\n\n"
        "The reports show nothing yet; x0 carries the signal, so a calibrated curve on it should rank well.\n\n"
        "Components:\n"
        f"- a logistic model on x0 [{idea_id}]\n"
        "- a slope of 3 chosen from the data's spread [new]\n"
    )


def _script(code: str) -> str:
    return f"Plan: as drafted.\n```python\n{code}```\n"


def _cycle_agent(tmp_path, replies, **sets):
    llm = ScriptedLLM(replies, default=None)
    brain = LLMBrain(llm, LLMBrainOptions(diff_mode=False, cycle=True))
    agent, run = llm_agent(tmp_path, brain, **{"brain.cycle": "community", **sets})
    store_items(run.task_root, [POST], None)
    fill_run_ideas(run, agent.session.pools, None)  # by rules: one idea, from the post
    return agent, run, llm


def test_one_cycle_selects_drafts_implements_fixes_and_reports(tmp_path):
    agent, run, llm = _cycle_agent(tmp_path, [], **{"budget.iterations": 1})
    idea = agent.session.pools.ideas.all()[0]
    done = "DONE: the curve on x0 is all the draft asks for."
    llm.replies.extend([_draft(idea.id), _script(CRASH), _script(CRASH), _script(GOOD), done])
    agent.run_loop()
    (node,) = agent.session.state.graph
    assert node.ok and node.meta["steps"] == 3 and "judged step 3's script done" in node.meta["refine_stopped"]
    purposes = [c["purpose"] for c in llm.calls]
    # The report request finds no reply left: the harness's report stands.
    assert purposes == ["cycle:draft", "cycle:implement", "cycle:fix", "cycle:fix", "cycle:refine", "report"]
    draft_prompt = llm.calls[0]["messages"][-1].content
    assert f"[{idea.id}]" in draft_prompt and "Components:" in draft_prompt
    # Stage III is isolated: the implementation request carries the draft and nothing of the pools.
    implement = llm.calls[1]["messages"][-1].content
    assert "a slope of 3 chosen from the data's spread" in implement and "Ideas offered" not in implement
    fix = llm.calls[2]["messages"][-1].content
    assert "boom in feature engineering" in fix and "Step 1" in fix
    # Every step is kept, and journaled.
    steps = sorted(p.name for p in (run.node_dir(node.id) / "steps").iterdir())
    assert steps == ["01", "02", "03"]
    outcomes = [json.loads((run.node_dir(node.id) / "steps" / s / "outcome.json").read_text()) for s in steps]
    assert [o["status"] for o in outcomes] == ["crash", "crash", "checked"]  # steps are never scored
    assert [r["step"] for r in run.journal.records if r["type"] == "node_step"] == [2, 3]
    # Stage IV: the report says what came from the community and what is new; the idea has its outcome.
    report = (run.node_dir(node.id) / "report.md").read_text()
    assert f"from the community's idea pool: {idea.id}" in report
    assert "new: a slope of 3 chosen from the data's spread" in report
    assert agent.session.pools.ideas.get(idea.id).trials[0].node == node.id
    assert agent.session.pools.novelty(agent.session.state.graph) == (1, 1)


def test_the_fix_loop_stops_at_its_step_bound(tmp_path):
    agent, _run, llm = _cycle_agent(tmp_path, [], **{"budget.iterations": 1, "brain.cycle_steps": 2})
    idea = agent.session.pools.ideas.all()[0]
    llm.replies.extend([_draft(idea.id), _script(CRASH), _script(CRASH), _script(GOOD)])
    agent.run_loop()
    (node,) = agent.session.state.graph
    assert not node.ok and node.meta["steps"] == 2
    assert [c["purpose"] for c in llm.calls] == ["cycle:draft", "cycle:implement", "cycle:fix", "report"]


def test_a_resume_after_a_fix_runs_the_fixed_script(tmp_path):
    from mlguild.rundir.replay import replay

    agent, run, llm = _cycle_agent(tmp_path, [], **{"budget.iterations": 1})
    idea = agent.session.pools.ideas.all()[0]
    llm.replies.extend([_draft(idea.id), _script(CRASH), _script(GOOD)])
    agent.run_loop()
    (node,) = agent.session.state.graph
    state = replay(run.journal.records, "maximize")
    assert state.graph[node.id].code_sha256 == node.code_sha256  # the fixed script's, from node_step


def test_novel_components_are_read_from_the_draft():
    assert novel_components(_draft("i123456")) == ["a slope of 3 chosen from the data's spread"]
    assert novel_components("Components:\n1. stacking with ridge [NEW]\n2. lgbm [i000001]") == ["stacking with ridge"]


def test_the_cycle_needs_an_llm_brain(tmp_path):
    task = make_task(tmp_path / "task")
    out = subprocess.run(
        [sys.executable, "-m", "mlguild", "run", str(task), "--brain", "recipes", "--cycle", "community"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "--cycle community needs the LLM brain" in out.stderr + out.stdout
