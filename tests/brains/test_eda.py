"""The exploratory node: with an LLM, the first node is an Op.EDA script run in the sandbox like
any other; what it prints goes into brief.md, which every later prompt carries, summarised once
by the model (or compacted by the harness when the model's reply is no summary). It is not
scored, not repaired, not counted in the iteration budget."""

from __future__ import annotations

from conftest import FULL, llm_agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op, Status
from mlguild.llm import ScriptedLLM
from mlguild.task.brief import FINDINGS_HEADING, brief_path, digest

EDA_REPLY = """Plan: look at the target and the strongest feature.
```python
import os
import pandas as pd
train = pd.read_csv(os.path.join(os.environ["MLGUILD_DATA"], "train.csv"))
print(f"rows: {len(train)}")
print(f"finding: x0 separates the classes (correlation {train['x0'].corr(train['y']):.2f})")
```
"""


def test_the_first_node_explores_and_its_findings_reach_every_later_prompt(tmp_path):
    llm = ScriptedLLM([EDA_REPLY], default=FULL)
    agent, run = llm_agent(
        tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 3, "brain.eda": True}
    )
    agent.run_loop()
    nodes = list(agent.session.state.graph)
    first = nodes[0]
    assert (first.op, first.status, first.score) == (Op.EDA, Status.EXPLORED, None)
    assert len([n for n in nodes if n.op != Op.EDA]) == 3  # the exploration is not an iteration
    # The model is asked once to summarise the output; the scripted LLM answers with a script,
    # which is no summary: the harness's compacted output serves.
    assert [c["purpose"] for c in llm.calls[:2]] == ["eda", "findings"]
    brief = brief_path(run.path).read_text()
    assert f"{FINDINGS_HEADING} {first.id}" in brief and "x0 separates the classes" in brief
    assert "What it printed, compacted" in brief
    later = llm.calls[2:]
    assert later and all("x0 separates the classes" in c["messages"][0].content for c in later)
    assert all(n.ok for n in nodes[1:])


def _first_draft(llm: ScriptedLLM) -> dict:
    return next(c for c in llm.calls if c["purpose"] == "draft")


CRASHING_EDA = """Plan: explore.
```python
print("rows: 150, the target is balanced", flush=True)
raise RuntimeError("column x9 is missing from test.csv")
```
"""
HANGING_EDA = """Plan: explore slowly.
```python
import time
print("finding: x0 is the strongest feature", flush=True)
time.sleep(600)
```
"""


def test_a_crashed_exploration_is_not_repaired_but_its_output_and_error_reach_the_next_prompt(tmp_path):
    llm = ScriptedLLM([CRASHING_EDA], default=FULL)
    agent, run = llm_agent(
        tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 2, "brain.eda": True}
    )
    agent.run_loop()
    first, *rest = list(agent.session.state.graph)
    assert first.op == Op.EDA and first.status == "crash"
    assert all(n.op != "debug" for n in rest) and all(n.parents != (first.id,) for n in rest)
    assert len(rest) == 2
    brief = brief_path(run.path).read_text()
    assert f"{FINDINGS_HEADING} {first.id}" in brief
    system = _first_draft(llm)["messages"][0].content
    assert "rows: 150, the target is balanced" in system
    assert "column x9 is missing from test.csv" in system and "did not finish" in system


def test_an_exploration_that_times_out_passes_on_what_it_printed_before_the_limit(tmp_path):
    llm = ScriptedLLM([HANGING_EDA], default=FULL)
    sets = {"budget.iterations": 1, "brain.eda": True, "brain.eda_timeout_s": 3}
    agent, _run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **sets)
    agent.run_loop()
    first = next(iter(agent.session.state.graph))
    assert first.status == "timeout"
    system = _first_draft(llm)["messages"][0].content
    assert "finding: x0 is the strongest feature" in system and "timeout" in system


def test_without_an_llm_there_is_no_exploration(small_task, tmp_path):
    from conftest import mlguild

    done = mlguild("run", str(small_task), "--brain", "recipes", "-n", "2", "--run-id", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    import json

    ops = [json.loads(line).get("op") for line in (tmp_path / "runs" / "r" / "journal.jsonl").read_text().splitlines()]
    assert Op.EDA not in ops


SUMMARY = """- 150 training rows; x0 separates the classes.
- x1 and x2 look like noise.
"""


def test_the_model_summarises_the_exploration_once_and_every_later_request_reads_it(tmp_path):
    # Issue 39: every request resent the exploration's raw output; it is now summarised once.
    llm = ScriptedLLM([EDA_REPLY, SUMMARY], default=FULL)
    brain = LLMBrain(llm, LLMBrainOptions(diff_mode=False))
    agent, run = llm_agent(tmp_path, brain, **{"budget.iterations": 2, "brain.eda": True})
    agent.run_loop()
    first = next(iter(agent.session.state.graph))
    purposes = [c["purpose"] for c in llm.calls]
    assert purposes[:2] == ["eda", "findings"] and purposes.count("findings") == 1
    asked = llm.calls[1]["messages"][-1].content
    assert "rows: " in asked and "finding: x0 separates the classes" in asked  # the whole output, once
    brief = brief_path(run.path).read_text()
    assert f"{FINDINGS_HEADING} {first.id}" in brief and SUMMARY.strip() in brief and "rows: " not in brief
    assert "The model's summary of what it printed" in brief
    # The summary's request starts with the exploration's system turn; every later request
    # with that turn and the summary after it, byte for byte.
    before = llm.calls[0]["messages"][0].content
    assert llm.calls[1]["messages"][0].content == before
    systems = {c["messages"][0].content for c in llm.calls[2:]}
    assert len(systems) == 1
    (system,) = systems
    assert system.startswith(before) and SUMMARY.strip() in system and "\nrows: " not in system
    # The brief in the run folder holds it: a brain built anew (as on a resume) that reads the
    # brief again sends the same turn, without asking the model again.
    graph, contexts = agent.session.state.graph, agent.session.contexts
    contexts.brief = None
    again = LLMBrain(llm, LLMBrainOptions(diff_mode=False))
    action = Action(Op.DRAFT, (), "a fresh draft")
    again._prepare(contexts.build(graph, action, len(graph), 30))
    assert again.talk.system == system and len(llm.calls) == len(purposes)
    run.close()


def test_the_harness_digest_of_an_exploration_is_compact_and_the_same_every_time():
    table = "\n".join(f"col_{i}      float64     {i * 0.5:>10}     " for i in range(400))
    output = f"rows: 5000\n\n{table}\nrows: 5000\nconclusion: x0 is the strongest feature\n"
    first = digest(output, limit=600)
    assert first == digest(output, limit=600) and len(first) <= 600
    lines = first.splitlines()
    assert lines[0] == "rows: 5000" and lines[1] == "col_0 float64 0.0"  # padding collapsed, the head kept
    assert lines[-1] == "conclusion: x0 is the strongest feature"  # the conclusions at the end kept
    assert first.count("rows: 5000") == 1 and "" not in lines  # repeated and blank lines dropped
    assert any("lines left out" in line for line in lines)
    assert digest("a\n\nb\n") == "a\nb"  # short output: all of it


def test_a_reply_that_is_no_summary_is_refused_and_a_long_one_is_cut_at_a_line():
    from mlguild.brains.llm.findings import parse_summary
    from mlguild.llm.base import Completion

    def reply(text: str, finish: str = "stop") -> Completion:
        return Completion(text=text, model="m", finish_reason=finish)

    assert parse_summary(reply(SUMMARY)) == SUMMARY.strip()
    assert parse_summary(reply("ok")) is None  # the scripted LLM's default
    assert parse_summary(reply(FULL)) is None  # a script
    assert parse_summary(reply(SUMMARY, "length")) is None  # cut off at its token limit
    long = "\n".join(f"- finding {i}: x{i} matters a little" for i in range(200))
    cut = parse_summary(reply(long))
    assert cut is not None and len(cut) <= 2400 and long.startswith(cut) and cut.endswith("matters a little")


def test_a_hybrid_whose_models_are_parked_at_the_summary_keeps_the_harness_digest(tmp_path):
    from mlguild.brains.hybrid import HybridBrain
    from mlguild.brains.recipes import RecipeBrain
    from mlguild.llm.errors import AllModelsExhausted

    llm = ScriptedLLM([EDA_REPLY, AllModelsExhausted({"scripted/fake": "daily quota exhausted"})], default=None)
    brain = HybridBrain(RecipeBrain(seed=0), LLMBrain(llm, LLMBrainOptions(diff_mode=False)))
    agent, run = llm_agent(tmp_path, brain, **{"brain.eda": True})
    first = agent.step(Action(Op.EDA, (), "explore the data before the first draft"), 30)
    assert first.status == Status.EXPLORED and [c["purpose"] for c in llm.calls] == ["eda", "findings"]
    assert brain.llm_down and "daily quota exhausted" in brain.llm_down  # the recipes carry on from here
    brief = brief_path(run.path).read_text()
    assert "What it printed, compacted" in brief and "finding: x0 separates the classes" in brief
    run.close()
