"""An LLM run's final submission is refitted on every labelled row even when its search would
overrun (issue 39): the model's scripts, over the scripted LLM, go through the same final
stage as the recipes', and the stage refits the best script whose measured refit fits the
time left, saying which, rather than keep a submission trained on the search's rows alone."""

from __future__ import annotations

import json

from conftest import llm_agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.final.stage import finish
from mlguild.llm import ScriptedLLM

# A logistic curve on ``column``; it records how many labelled rows it trained on.
SCRIPT = """
import math, os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={{"id": str}})
os.makedirs("output", exist_ok=True)
Path("output/rows.txt").write_text(str(len(train)))
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={{"id": str}})
    p = [1 / (1 + math.exp(-{slope} * x)) for x in frame["{column}"]]
    pd.DataFrame({{"id": frame["id"], "y": p}}).to_csv("output/" + dst, index=False)
"""


def _reply(title: str, slope: float, column: str = "x0") -> str:
    return f"Title: {title}\nPlan: a logistic curve.\n```python\n{SCRIPT.format(slope=slope, column=column)}```\n"


def test_an_llm_run_whose_search_would_overrun_still_refits_its_final(tmp_path):
    # The run: the best node's refit needed about 380 s of the 133 s left, and the
    # final submission was trained on the 60% of labelled rows the search sees.
    replies = [_reply("Curve on x0", 3), _reply("Flatter curve on x0", 2.9), _reply("Curve on x1", 3, "x1")]
    llm = ScriptedLLM(replies, default=None)
    sets = {"budget.iterations": 3, "search.num_drafts": 3, "sandbox.script_timeout_s": 60}
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **sets)
    stop = agent.run_loop()
    graph, state = agent.session.state.graph, agent.session.state
    assert [c["purpose"] for c in llm.calls] == ["draft", "draft", "draft"]
    assert state.best_id == "n0001" and graph["n0002"].ok and graph["n0003"].ok
    # As measured: the best node's script is slow (its refit needs about 500 s), the one
    # within noise of it is quick; then the search's overrun leaves a minute.
    graph["n0001"].timing.update(exec_s=300.0, budget_s=300.0)
    graph["n0002"].timing.update(exec_s=1.0, budget_s=300.0)
    graph["n0003"].timing.update(exec_s=0.5, budget_s=300.0)
    run.config.budget.time_s = state.spent_s + agent.session.clock.elapsed() + 60.0
    run.config.budget.iterations = None
    run.config.budget.script_share = 1.0
    choice = finish(agent.session, stop).choice
    assert choice is not None and choice["refit"] is True
    assert choice["refit_fallback"] == {**choice["refit_fallback"], "wanted": "n0001", "refitted": "n0002"}
    refit = graph[choice["node"]]
    assert refit.op == "refit" and refit.parents[0] == "n0002"
    split = run.workspace.manifest()["split"]
    every_row = split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)
    assert int((run.node_dir(refit.id) / "output" / "rows.txt").read_text()) == every_row
    assert json.loads((run.path / "final" / "final.json").read_text())["refit_fallback"]["refitted"] == "n0002"
    assert len(llm.calls) == 3  # the final stage asks the model nothing
    run.close()
