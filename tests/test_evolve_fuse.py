"""Stagnation moves through the brains: an evolve sees its branch's trajectory and changes
direction, a fuse combines several parents (the LLM brain writes one script from their code;
the recipe brain blends their predictions), and a blend needs no LLM."""

from __future__ import annotations

from conftest import GOOD, make_task

from mlguild.agent import Agent
from mlguild.brains.llm_brain import LLMBrain, LLMBrainOptions
from mlguild.brains.recipes import RecipeBrain
from mlguild.config import load_config
from mlguild.llm import ScriptedLLM
from mlguild.protocols import Action
from mlguild.rundir import create_run
from mlguild.sandbox import get_sandbox
from mlguild.search import get_policy
from mlguild.task import load_task

FULL = f"Plan: logistic curve on x0.\n```python\n{GOOD}```\n"
SETS = ["search.num_drafts=2", "search.draft_every=0", "search.fuse_every=0", "sandbox.script_timeout_s=120"]


def _agent(tmp_path, brain, n=300):
    cfg = load_config(None, [*SETS, "budget.iterations=50"])
    run = create_run(load_task(make_task(tmp_path / "t", n=n)), cfg, tmp_path / "runs")
    return Agent(run, brain, get_policy(cfg.search, cfg.budget), get_sandbox("local")), run


def test_the_llm_brain_fuses_the_code_of_several_parents_and_evolves_from_a_trajectory(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, _run = _agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)))
    first = agent.step(Action("draft"), 60)
    second = agent.step(Action("draft"), 60)
    agent.step(Action("improve", (first.id,)), 60)
    fused = agent.step(Action("fuse", (first.id, second.id), "stagnant"), 60)
    assert fused.ok and fused.parents == (first.id, second.id) and not fused.is_blend
    prompt = llm.calls[-1]["messages"][-1].content
    assert llm.calls[-1]["purpose"] == "fuse" and "# Solutions from different branches" in prompt
    assert f"## {first.id} (holdout" in prompt and f"## {second.id} (holdout" in prompt
    assert fused.branch == fused.id  # a fuse starts a branch of its own

    evolved = agent.step(Action("evolve", (first.id,), "stagnant"), 60)
    assert evolved.ok and evolved.branch == first.branch
    prompt = llm.calls[-1]["messages"][-1].content
    assert llm.calls[-1]["purpose"] == "evolve" and "# A branch that has stopped improving" in prompt
    assert "- n0001 (draft)" in prompt and "- n0003 (improve)" in prompt and "against it" in prompt

    calls = len(llm.calls)
    blend = agent.step(Action("blend", (first.id, second.id)), 60)
    assert len(llm.calls) == calls  # a blend needs no LLM
    assert blend.is_blend


def test_the_recipe_brain_evolves_to_another_family_and_fuses_by_blending(tmp_path):
    agent, run = _agent(tmp_path, RecipeBrain(), n=400)
    first = agent.step(Action("draft"), 120)
    second = agent.step(Action("draft"), 120)
    assert first.ok and second.ok, (first.failure, second.failure)
    improved = agent.step(Action("improve", (first.id,)), 120)
    evolved = agent.step(Action("evolve", (first.id,), "stagnant"), 120)
    assert evolved.ok, evolved.failure
    tried = {first.meta["recipe"], second.meta["recipe"]}
    assert evolved.meta["recipe"] not in tried  # an untried family first
    assert evolved.meta["evolved_from"] == first.id and evolved.branch == first.branch
    plan = (run.node_dir(evolved.id) / "plan.md").read_text()
    assert plan.startswith("## Evolve: from") and f"- {improved.id} (improve)" in plan

    fused = agent.step(Action("fuse", (first.id, second.id), "stagnant"), 120)
    assert fused.ok and fused.is_blend and fused.meta["fuse"] == [first.id, second.id]
    staged = sorted(p.name for p in (run.node_dir(fused.id) / "parents").iterdir())
    assert staged == sorted([first.id, second.id])
