"""What the memory puts in a prompt: records of this task (earlier runs on it) first, each
naming its run and task; another task's records only as far as the store's measured
transfer earns them a place, so a store of unrelated tasks adds nothing."""

from __future__ import annotations

from conftest import FULL, llm_agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.config import mlguild_home
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.llm import ScriptedLLM
from mlguild.memory import MemoryStore, Retriever, TaskTraits
from mlguild.memory.experience import Experience

HOTELS = TaskTraits("regression", "rmse", 300, 3, "tabular", 0.0, 0)


def _record(task: str, run: str, node: str, traits: TaskTraits, title: str, score: float) -> Experience:
    return Experience(
        run=run, task=task, node=node, op="draft", status="scored", outcome="first", title=title, plan=title,
        change="", recipe="lightgbm", move="", score=score, parent="", parent_score=None, gain_spreads=None,
        cost_ratio=None, exec_s=5.0, traits=traits,
    )  # fmt: skip


def _store() -> Retriever:
    return Retriever(MemoryStore(mlguild_home() / "memory.sqlite"))


def _llm_agent(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, _run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)))
    return llm, agent


def test_a_store_holding_only_an_unrelated_tasks_records_adds_nothing_to_a_prompt(tmp_path):
    store = _store()
    llm, agent = _llm_agent(tmp_path)
    near = agent.session.memory.traits  # a binary task just like this one, but another task
    for i in range(6):  # hotel prices: another task type, scores 13-22; and another binary task
        store.add(_record("hotels", "hotel-run", f"n{i:04d}", HOTELS, f"lightgbm on hotel prices {i}", 13.0 + i))
        store.add(_record("churn-like", "near-run", f"n{i:04d}", near, f"lightgbm draft on churn {i}", 0.8))
    agent.step(Action(Op.DRAFT), 30)
    prompt = llm.calls[-1]["messages"][-1].content
    assert "hotel" not in prompt and "churn" not in prompt and "In earlier runs" not in prompt
    recall = agent.session.memory.recall("draft binary roc_auc numeric lightgbm")
    assert not recall.other_tasks  # unmeasured transfer between tasks: no other task's records


def test_an_earlier_run_on_this_task_is_shown_first_and_named(tmp_path):
    llm, agent = _llm_agent(tmp_path)
    memory = agent.session.memory
    _store().add(_record(memory.task, "earlier-run", "n0007", memory.traits, "lightgbm draft, 500 trees", 0.91))
    agent.step(Action(Op.DRAFT), 30)
    prompt = llm.calls[-1]["messages"][-1].content
    assert "In earlier runs" in prompt
    assert f"[run earlier-run, task {memory.task}: n0007, draft] lightgbm draft, 500 trees" in prompt
