"""The exploratory node: with an LLM, the first node is an Op.EDA script run in the sandbox like
any other; what it prints goes into brief.md, which every later prompt carries. It is not
scored, not repaired, not counted in the iteration budget."""

from __future__ import annotations

from conftest import CRASH, FULL, llm_agent

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


def test_a_failed_exploration_is_left_alone(tmp_path):
    crash = f"Plan: explore.\n```python\n{CRASH}```\n"
    llm = ScriptedLLM([crash], default=FULL)
    agent, run = llm_agent(
        tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 2, "brain.eda": True}
    )
    agent.run_loop()
    first, *rest = list(agent.session.state.graph)
    assert first.op == Op.EDA and not first.ok and first.status != Status.EXPLORED
    assert all(n.op != "debug" for n in rest) and all(n.parents != (first.id,) for n in rest)
    assert FINDINGS_HEADING not in (brief_path(run.path).read_text() if brief_path(run.path).exists() else "")
    assert len(rest) == 2


def test_without_an_llm_there_is_no_exploration(small_task, tmp_path):
    from conftest import mlguild

    done = mlguild("run", str(small_task), "--brain", "recipes", "-n", "2", "--run-id", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    import json

    ops = [json.loads(line).get("op") for line in (tmp_path / "runs" / "r" / "journal.jsonl").read_text().splitlines()]
    assert Op.EDA not in ops
