"""The exploratory node: with an LLM, the first node is an Op.EDA script run in the sandbox like
any other; what it prints goes into brief.md, which every later prompt carries. It is not
scored, not repaired, not counted in the iteration budget."""

from __future__ import annotations

from conftest import FULL, llm_agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.core.vocabulary import Op, Status
from mlguild.llm import ScriptedLLM
from mlguild.task.brief import FINDINGS_HEADING, brief_path

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
    assert llm.calls[0]["purpose"] == "eda"
    brief = brief_path(run.path).read_text()
    assert f"{FINDINGS_HEADING} {first.id}" in brief and "x0 separates the classes" in brief
    later = llm.calls[1:]
    assert later and all("x0 separates the classes" in c["messages"][0].content for c in later)
    assert all(n.ok for n in nodes[1:])


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
    system = llm.calls[1]["messages"][0].content  # the first draft's
    assert "rows: 150, the target is balanced" in system
    assert "column x9 is missing from test.csv" in system and "did not finish" in system


def test_an_exploration_that_times_out_passes_on_what_it_printed_before_the_limit(tmp_path):
    llm = ScriptedLLM([HANGING_EDA], default=FULL)
    sets = {"budget.iterations": 1, "brain.eda": True, "brain.eda_timeout_s": 3}
    agent, _run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **sets)
    agent.run_loop()
    first = next(iter(agent.session.state.graph))
    assert first.status == "timeout"
    system = llm.calls[1]["messages"][0].content
    assert "finding: x0 is the strongest feature" in system and "timeout" in system


def test_without_an_llm_there_is_no_exploration(small_task, tmp_path):
    from conftest import mlguild

    done = mlguild("run", str(small_task), "--brain", "recipes", "-n", "2", "--run-id", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    import json

    ops = [json.loads(line).get("op") for line in (tmp_path / "runs" / "r" / "journal.jsonl").read_text().splitlines()]
    assert Op.EDA not in ops
