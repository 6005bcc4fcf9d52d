"""The LLM brain with the packaged scripted LLM: context isolation, stepwise drafts,
escalation, budgets, hybrid fallback and brain selection."""

import pytest
from conftest import FULL, GOOD, llm_agent

from mlguild.brains import get_brain, resolve_brain_name
from mlguild.brains.hybrid import HybridBrain
from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions, stagnation_tier
from mlguild.brains.recipes import RecipeBrain
from mlguild.core.errors import ConfigError
from mlguild.llm import AllModelsExhausted, Router, ScriptedLLM


def test_prompts_are_isolated_and_bounded(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, _run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 6})
    agent.run_loop()
    assert all(n.ok for n in agent.session.state.graph)
    improve_calls = [c for c in llm.calls if c["purpose"] == "improve"]
    assert improve_calls
    prompt = improve_calls[-1]["messages"][-1].content
    assert prompt.count('print("cv_score: 0.99999")') == 1  # the parent's code only, never every node's
    assert "holdout roc_auc" in prompt and "may run at most 30 s this time" in prompt
    draft = [c for c in llm.calls if c["purpose"] == "draft"][-1]["messages"][-1].content
    assert "Approaches already tried" in draft and "logistic curve" in draft


def test_stepwise_drafts_assemble_one_script(tmp_path):
    parts = [
        "Plan: read, featurise, fit a curve, predict.",
        "```python\nimport math, os\nfrom pathlib import Path\nimport pandas as pd\ndata = Path(os.environ['MLGUILD_DATA'])\n```",
        "```python\nSLOPE = 3.0\n```",
        "```python\nos.makedirs('output', exist_ok=True)\n```",
        "```python\nprint('cv_score: 0.5')\n```",
        "```python\n" + GOOD.split("os.makedirs", 1)[1].join(["import math\nos.makedirs", ""]) + "```",
    ]
    llm = ScriptedLLM(parts, default=FULL)
    brain = LLMBrain(llm, LLMBrainOptions(stepwise=True))
    agent, run = llm_agent(tmp_path, brain, **{"budget.iterations": 1, "search.num_drafts": 1})
    agent.run_loop()
    node = agent.session.state.graph["n0001"]
    assert [c["purpose"] for c in llm.calls][:6] == [
        "draft:plan",
        "draft:data",
        "draft:features",
        "draft:model",
        "draft:train",
        "draft:predict",
    ]
    code = (run.node_dir("n0001") / "solution.py").read_text()
    assert code.index("SLOPE = 3.0") < code.index("cv_score") < code.index("to_csv")
    assert node.ok, node.failure


def test_escalation_tiers():
    assert [stagnation_tier(s) for s in (0, 1, 2, 3, 4, 9)] == [1, 1, 2, 2, 3, 3]


def test_token_budget_stops_the_run(tmp_path):
    router = Router([ScriptedLLM(default=FULL)], max_tokens_total=400, sleep=lambda s: None)
    agent, _run = llm_agent(tmp_path, LLMBrain(router), **{"budget.iterations": 20})
    assert str(agent.run_loop()) == "budget: llm_tokens"
    assert 0 < len(agent.session.state.graph) < 20


def test_hybrid_falls_back_to_recipes_when_every_model_is_parked(tmp_path):
    llm = ScriptedLLM([AllModelsExhausted({"scripted/fake": "daily quota exhausted"})] * 10, default=FULL)
    brain = HybridBrain(RecipeBrain(seed=0), LLMBrain(llm))
    agent, _run = llm_agent(tmp_path, brain, **{"budget.iterations": 3, "search.num_drafts": 1})
    agent.run_loop()
    graph = agent.session.state.graph
    assert graph["n0001"].meta.get("recipe")  # recipes draft
    assert "every LLM is parked" in graph["n0002"].plan  # the LLM improve fell back
    assert all(n.ok for n in graph), [(n.id, n.status, n.failure) for n in graph]


def test_brain_selection():
    assert resolve_brain_name("auto", has_model=False) == "recipes"
    assert resolve_brain_name("auto", has_model=True) == "llm"
    with pytest.raises(ConfigError, match="--model"):
        resolve_brain_name("hybrid", has_model=False)
    assert isinstance(get_brain("hybrid", llm_factory=lambda: ScriptedLLM()), HybridBrain)


def test_an_improve_prompt_shows_the_parents_run_time_what_was_tried_on_it_and_the_other_branches(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, run = llm_agent(
        tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 5, "search.fuse_every": 0}
    )
    agent.run_loop()
    improves = [c for c in llm.calls if c["purpose"] == "improve"]
    assert len(improves) == 3
    last = improves[-1]["messages"][-1].content
    graph = agent.session.state.graph
    made = graph["n0005"]  # the node the last improve prompt made
    parent = graph[made.parents[0]]
    assert f"It ran {parent.timing['exec_s']:.0f} s of the {parent.timing['budget_s']:.0f} s it was allowed" in last
    tried = [n for n in graph.children(parent.id) if n.id != made.id]
    assert tried and "## Already tried on this solution" in last
    assert all(f"{n.id} (improve)" in last for n in tried)
    assert "## The best node of each branch" in last
    system = improves[-1]["messages"][0].content
    n_train = run.profile.n_train
    assert f"has {n_train} rows, `holdout.csv` {run.profile.n_holdout}" in system and "the harness set" in system


def test_every_request_of_a_run_shares_one_system_turn_for_the_prompt_cache(tmp_path):
    """The task, the data and the contract are said once, in a system turn that is the same
    text in every request (a prefix a provider's prompt cache can serve); the user turns do not
    repeat them, and each says its own time budget."""
    llm = ScriptedLLM(default=FULL)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 5})
    agent.run_loop()
    purposes = {c["purpose"] for c in llm.calls}
    assert {"draft", "improve"} <= purposes
    systems = {c["messages"][0].content for c in llm.calls}
    assert len(systems) == 1
    (system,) = systems
    assert "MLGUILD_DATA" in system and "# Data" in system and run.spec.metric in system
    for call in llm.calls:
        (user,) = [m.content for m in call["messages"] if m.role == "user"]
        assert "## Script contract" not in user and "# Task" not in user
        assert "may run at most" in user
