"""Memory every brain acts on (issue 30, item 6) and the guild's similar tasks (item 7).

Real runs on the scripted LLM, with the shared memory store in the test's own home:
- a second run's LLM prompt carries the first run's records, and the recipe script an LLM
  repaired in the first run is drafted repaired in the second, with no repair request;
- the planner asks the memory with its own draft plan and revises the plan from what it got,
  in a request it makes anyway (stepwise drafts; the review of a one-request draft);
- the move and family priors reach the LLM's prompts;
- a similar task's records enter a run's pools with less weight than this task's, and only
  once the store has shown that results carry over between tasks.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from conftest import FULL, GOOD, llm_agent, make_task
from typer.testing import CliRunner

from mlguild.brains.hybrid import HybridBrain
from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config, mlguild_home
from mlguild.core.protocols import Action, Proposal
from mlguild.core.vocabulary import Op
from mlguild.llm import ScriptedLLM
from mlguild.memory import MemoryStore, TaskTraits
from mlguild.memory.experience import Experience
from mlguild.pools import Pools, fill_run_guild
from mlguild.pools.guild import similar_records
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

SETS = ["search.num_drafts=2", "search.draft_every=0", "search.fuse_every=0", "sandbox.script_timeout_s=60"]
BROKEN = GOOD.replace(
    "import json, os\n", "import json, os\nraise RuntimeError('the date column breaks this recipe')\n"
)
RECIPE = {"brain": "recipes", "recipe": "curve"}


def _hybrid_run(task, tmp_path, drafts: list[str], llm: ScriptedLLM):
    """A new run of ``task`` with a hybrid brain whose recipes draft ``drafts`` (recipe "curve")."""
    cfg = load_config(None, [*SETS, "budget.iterations=20"])
    run = create_run(load_task(task), cfg, tmp_path / "runs")
    recipes = ScriptedBrain([Proposal("## Draft: curve recipe", code, dict(RECIPE)) for code in drafts])
    brain = HybridBrain(recipes, LLMBrain(llm, LLMBrainOptions(diff_mode=False)))
    return Agent(open_session(run, brain, get_sandbox("local"))), run


def _purposes(llm: ScriptedLLM) -> list[str]:
    return [call["purpose"] for call in llm.calls]


def test_a_second_run_carries_the_first_runs_records_and_its_repair_without_a_request(tmp_path):
    task = make_task(tmp_path / "t")
    first_llm = ScriptedLLM([f"The raise is the bug: drop it.\n```python\n{GOOD}```\n"])
    first, first_run = _hybrid_run(task, tmp_path, [BROKEN], first_llm)
    broken = first.step(Action(Op.DRAFT), 60)
    assert broken.status == "crash"
    fixed = first.step(Action(Op.DEBUG, (broken.id,)), 60)
    assert fixed.ok and _purposes(first_llm) == ["debug"]
    first.session.close()
    stored = MemoryStore(mlguild_home() / "memory.sqlite").repairs(first_run.task_key)  # filed by its data
    assert [(r.recipe, r.run, r.node) for r in stored] == [("curve", first_run.path.name, fixed.id)]
    assert "RuntimeError" in stored[0].failure  # keyed by what failed

    # The next run: the recipe drafts the same crash (other parameters); the LLM only improves.
    second_llm = ScriptedLLM(default=FULL)
    second, second_run = _hybrid_run(task, tmp_path, [BROKEN.replace("-3 *", "-2.5 *")], second_llm)
    draft = second.step(Action(Op.DRAFT), 60)
    assert draft.ok, draft.failure
    assert draft.meta["repaired_by"] == f"{first_run.path.name}/{fixed.id}"
    assert second_llm.calls == []  # repaired with no LLM request
    code = (second_run.node_dir(draft.id) / "solution.py").read_text()
    assert "RuntimeError" not in code and "-2.5 *" in code
    assert "an earlier run of this task" in (second_run.node_dir(draft.id) / "plan.md").read_text()

    second.step(Action(Op.IMPROVE, (draft.id,)), 60)
    assert "debug" not in _purposes(second_llm) and _purposes(second_llm) == ["improve"]
    prompt = second_llm.calls[-1]["messages"][-1].content
    assert "In earlier runs" in prompt
    assert f"[run {first_run.path.name}, task {task.name}: {broken.id}, draft]" in prompt
    second.session.close()
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    store.forget(run=first_run.path.name)  # `mlguild memory forget --run`: its repairs go with its records
    assert store.repairs(first_run.task_key) == []


def test_the_stepwise_planner_asks_the_memory_with_its_plan_and_revises_it(tmp_path):
    plan = "Gradient boosting with a logistic link on x0, x1 and x2, five folds."
    revised = "A logistic curve on x0 alone: the boosting draft of this run did not beat it."
    part = lambda code: f"```python\n{code}\n```"
    replies = [
        FULL,  # the first draft is a one-request draft (no stepwise yet): n0001
        plan,  # the stepwise draft's plan request
        f"Revised plan: {revised}\n{part(GOOD)}",  # its first part revises the plan
        *[part("pass") for _ in range(4)],
    ]
    llm = ScriptedLLM(replies, default=FULL)
    brain = LLMBrain(llm, LLMBrainOptions(diff_mode=False))
    agent, run = llm_agent(tmp_path, brain)
    first = agent.step(Action(Op.DRAFT), 30)
    brain.options.stepwise = True
    second = agent.step(Action(Op.DRAFT), 30)
    purposes = _purposes(llm)
    assert purposes == [
        "draft",
        "draft:plan",
        "draft:data",
        "draft:features",
        "draft:model",
        "draft:train",
        "draft:predict",
    ]
    data_prompt = llm.calls[2]["messages"][-1].content
    assert "# Earlier attempts most like this plan (the memory, asked with the plan)" in data_prompt
    assert f"{first.id}, draft]" in data_prompt  # this run's record of the first draft
    started = [r for r in run.journal.records if r["type"] == "node_started" and r["node"]["id"] == second.id]
    recalled = started[0]["node"]["meta"]["plan_recall"]
    assert recalled["query"] == plan and any(f"{first.id}, draft]" in line for line in recalled["records"])
    assert (run.node_dir(second.id) / "plan.md").read_text().strip() == revised
    assert second.ok, second.failure


def test_a_reviewed_draft_weighs_its_plan_against_the_memory_in_the_review_request(tmp_path):
    again = FULL.replace("Plan:", "Plan: again,").replace("```python\n", "```python\n# the second\n")
    llm = ScriptedLLM([FULL, "VERDICT: pass", again, "VERDICT: pass"])
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False, review=True)))
    first = agent.step(Action(Op.DRAFT), 30)
    second = agent.step(Action(Op.DRAFT), 30)
    assert _purposes(llm) == ["draft", "review", "draft", "review"]  # no request added
    assert "Earlier attempts most like this plan" not in llm.calls[1]["messages"][-1].content  # nothing yet
    review = llm.calls[3]["messages"][-1].content
    assert "Earlier attempts most like this plan" in review and f"{first.id}, draft]" in review
    meta = json.loads((run.node_dir(second.id) / "meta.json").read_text())
    assert meta["plan_recall"]["query"].startswith("Plan: again, logistic curve on x0")


def _record(task: str, run: str, node: str, traits: TaskTraits, recipe: str, score: float, **kw) -> Experience:
    fields = dict(
        run=run, task=task, node=node, op="draft", status="scored", outcome="first", title=f"{recipe} draft",
        plan=f"{recipe} draft", change="", recipe=recipe, move="", score=score, parent="", parent_score=None,
        gain_spreads=None, cost_ratio=None, exec_s=5.0, traits=traits,
    )  # fmt: skip
    fields.update(kw)
    return Experience(**fields)  # type: ignore[arg-type]


def test_the_llm_prompt_states_which_families_measured_gains_on_this_task(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, _run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)))
    memory = agent.session.memory
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    for i, (recipe, score) in enumerate([("lightgbm", 0.9), ("linear", 0.6), ("forest", 0.75)]):
        store.add(_record(memory.task, "earlier", f"n000{i + 1}", memory.traits, recipe, score))
    agent.step(Action(Op.DRAFT), 30)
    prompt = llm.calls[-1]["messages"][-1].content
    assert "# What measured gains on this kind of task" in prompt
    assert "- family lightgbm: +1.22 score spreads against the mean of its run's families" in prompt
    assert "- family linear: -1.22 score spreads" in prompt  # what lost is said too


WORDS = ("alpha", "bravo", "charlie", "delta", "echo")


def _move_records(
    task: str, traits: TaskTraits, gains: list[float], title: str = "{task} variant {word}"
) -> list[Experience]:
    """One run of ``task``: improves whose moves m0, m1, ... gained ``gains`` (score spreads),
    each titled ``title`` with its word of ``WORDS``."""
    return [
        _record(task, f"run-{task}", f"n{j:04d}", traits, "curve", 0.8, op="improve", outcome="gain" if g > 0 else "no_gain",
                move=f"m{j}", gain_spreads=g, title=title.format(task=task, word=WORDS[j]),
                plan=title.format(task=task, word=WORDS[j]), parent="n0000")
        for j, g in enumerate(gains)
    ]  # fmt: skip


def test_a_similar_tasks_records_enter_the_pools_with_less_weight_than_this_tasks(tmp_path):
    from mlguild.cli.app import app

    llm = ScriptedLLM(default=FULL)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)))
    memory = agent.session.memory
    agent.session.close()
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    gains = [1.0, -1.0, 0.5, -0.5, 2.0]
    # Four similar tasks (30 times the rows) whose moves did the same everywhere: gains carry over.
    near = dataclasses.replace(memory.traits, rows=memory.traits.rows * 30)
    for exp in _move_records("atlas", near, gains):
        store.add(exp)
    assert similar_records(store, memory.task, run.path.name, memory.traits, 2.0) == []  # unmeasured: none
    for other in ("boreal", "cedar", "dune"):
        for exp in _move_records(other, near, gains):
            store.add(exp)
    for exp in _move_records(memory.task, memory.traits, gains, "move {word} here"):  # an earlier run of this task
        store.add(dataclasses.replace(exp, run="earlier"))
    similar = similar_records(store, memory.task, run.path.name, memory.traits, 2.0)
    assert {e.task for e, _ in similar} == {"atlas", "boreal", "cedar", "dune"}
    assert all(w == round(1 / (1 + math.log10(30)), 4) for _, w in similar)  # similarity times the transfer, 1

    # A prompt's recall: a similar task's record with its weight, and how that weight is made.
    recall = memory.recall("atlas")
    assert recall.other_tasks and all(
        "task atlas:" in line and line.endswith("(weight 0.40)") for line in recall.other_tasks
    )
    assert "times the measured transfer of gains between tasks (1.00, over" in recall.transfer

    pools = Pools.open(run.path)
    try:
        line = fill_run_guild(run, pools)
        assert line is not None and "5 report(s) of 1 earlier run(s) of this task" in line
        assert "of 4 similar task(s), weighted by similarity and measured transfer" in line
        same, other = pools.reports.get("earlier/n0004"), pools.reports.get("run-atlas/n0004")
        assert same.weight == 1.0 and other.weight == pytest.approx(0.4, abs=0.01)
        assert "on the similar task atlas (weight 0.40)" in other.result
        # By its words alone the similar task's report matches best; at its weight, this task's comes first.
        assert pools.store.search("reports", "atlas echo", 1) == ["run-atlas/n0004"]
        assert pools.reports.relevant("atlas echo", 1)[0].node == "earlier/n0004"
        idea = next(i for i in pools.ideas.all() if any(s.item == "run-atlas/n0004" for s in i.sources))
        assert "a similar task's, weight 0.40" in idea.line()
    finally:
        pools.close()

    listed = CliRunner().invoke(app, ["knowledge", "list", "--task", str(run.task_root)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "from earlier runs of this task (the guild" in listed.output
    assert "from earlier runs of similar tasks (weighted by similarity times measured transfer): 20" in listed.output
    assert "run-atlas/n0004" in listed.output and "0.40" in listed.output


def test_a_store_that_has_not_shown_transfer_brings_no_similar_task_into_the_pools(tmp_path):
    task = make_task(tmp_path / "t")
    run = create_run(load_task(task), load_config(None, SETS), tmp_path / "runs")
    traits = TaskTraits.of(run.spec.public_dict(), run.profile.to_dict())
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    for exp in _move_records("atlas", traits, [1.0, -1.0, 0.5, -0.5, 2.0]):  # one other task, just like this one
        store.add(exp)
    pools = Pools.open(run.path)
    try:
        assert fill_run_guild(run, pools) is None and pools.reports.all() == []
    finally:
        pools.close()


def test_the_recipe_brain_drafts_a_recipe_with_an_earlier_runs_repair_of_it(tmp_path):
    from mlguild.brains.recipes import RecipeBrain
    from mlguild.memory import StoredRepair

    task = make_task(tmp_path / "t")
    cfg = load_config(None, [*SETS, "budget.iterations=20", "final.reference_models=false"])

    def recipe_run():
        run = create_run(load_task(task), cfg, tmp_path / "runs")
        return Agent(open_session(run, RecipeBrain(), get_sandbox("local"))), run

    first, first_run = recipe_run()
    drafted = first.step(Action(Op.DRAFT), 120)
    code = (first_run.node_dir(drafted.id) / "solution.py").read_text()
    first.session.close()
    # As if an LLM had repaired this recipe's script in an earlier run: the repair adds a line.
    fixed = code.replace("\nimport ", "\nprint('repaired in an earlier run')\nimport ", 1)
    assert fixed != code
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    recipe = drafted.meta["recipe"]
    store.add_repair(
        StoredRepair(first_run.task_key, recipe, "ValueError in step 'columns'", "old", "n0002", code, fixed)
    )

    second, second_run = recipe_run()
    draft = second.step(Action(Op.DRAFT), 120)
    assert draft.meta["recipe"] == recipe and draft.meta["repaired_by"] == "old/n0002"
    repaired = (second_run.node_dir(draft.id) / "solution.py").read_text()
    assert "print('repaired in an earlier run')\nimport " in repaired
    assert draft.ok, draft.failure
    second.session.close()


def test_a_repair_ports_exactly_at_the_end_of_a_script_and_as_a_deletion():
    from mlguild.brains.repair_port import port_repair

    code = GOOD + 'print(f"wrote the outputs")\n'
    appended = code + "\nprint('repaired')\n"
    assert port_repair(code, code, appended) == appended  # the last line was once lost
    removed = code.replace('print("cv_score: 0.99999")\n', "")
    assert port_repair(code, code, removed) == removed
