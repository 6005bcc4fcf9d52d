"""Stagnation moves through the brains: an evolve sees its branch's trajectory and changes
direction, a fuse combines several parents (the LLM brain writes one script from their code;
the recipe brain blends their predictions), and a blend needs no LLM."""

from __future__ import annotations

from conftest import GOOD, make_task

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.brains.recipes import RecipeBrain
from mlguild.config import load_config
from mlguild.core.protocols import Action
from mlguild.llm import ScriptedLLM
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

FULL = f"Plan: logistic curve on x0.\n```python\n{GOOD}```\n"
SETS = ["search.num_drafts=2", "search.draft_every=0", "search.fuse_every=0", "sandbox.script_timeout_s=120"]


def _agent(tmp_path, brain, n=300):
    cfg = load_config(None, [*SETS, "budget.iterations=50"])
    run = create_run(load_task(make_task(tmp_path / "t", n=n)), cfg, tmp_path / "runs")
    return Agent(open_session(run, brain, get_sandbox("local"))), run


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
    assert f"## {first.id}: " in prompt and f"## {second.id}: " in prompt and "(holdout roc_auc = " in prompt
    assert "are within noise" in prompt
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


BROKEN = GOOD.replace(
    "import json, os\n", "import json, os\nraise RuntimeError('the date column breaks this recipe')\n"
)


def test_port_repair_carries_a_fix_over_to_a_variant_and_refuses_a_partial_one():
    from mlguild.brains.repair_port import port_repair

    variant = BROKEN.replace("-3 *", "-2.5 *")  # the next draft of the recipe, other parameters
    assert variant != BROKEN
    ported = port_repair(variant, BROKEN, GOOD)
    assert ported is not None and "RuntimeError" not in ported and "-2.5 *" in ported
    assert port_repair("print('another script')\n", BROKEN, GOOD) is None  # nothing to apply to
    assert port_repair(variant, GOOD, GOOD) is None  # no change


def test_a_hybrid_draft_carries_over_the_llms_repair_of_its_recipe(tmp_path):
    from mlguild.brains.hybrid import HybridBrain
    from mlguild.brains.scripted import ScriptedBrain
    from mlguild.core.protocols import Proposal

    meta = {"brain": "recipes", "recipe": "curve"}
    recipes = ScriptedBrain(
        [Proposal("## Draft: curve", BROKEN, meta), Proposal("## Draft: curve", BROKEN.replace("-3 *", "-2.5 *"), meta)]
    )
    llm = ScriptedLLM([f"The raise is the bug.\n```python\n{GOOD}```\n"])
    agent, run = _agent(tmp_path, HybridBrain(recipes, LLMBrain(llm, LLMBrainOptions(diff_mode=False))))
    first = agent.step(Action("draft"), 60)
    assert first.status == "crash"
    fixed = agent.step(Action("debug", (first.id,)), 60)
    assert fixed.ok and len(llm.calls) == 1
    second = agent.step(Action("draft"), 60)
    assert second.ok, second.failure  # the same crash was not drafted again
    assert second.meta["repaired_by"] == fixed.id and len(llm.calls) == 1  # and cost no LLM call
    code = (run.node_dir(second.id) / "solution.py").read_text()
    assert "RuntimeError" not in code and "-2.5 *" in code
    assert "Repaired in advance" in (run.node_dir(second.id) / "plan.md").read_text()
