"""A task with several targets: a prompt built on a scored node shows its holdout score on
each target column (the one-column metric the task's metric averages), computed by the
harness from the sealed labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.config import load_config
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.llm import ScriptedLLM
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task

# Predicts a from x0 well and b not at all (a constant): b's column must show the larger error.
SCRIPT = """
import os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    pd.DataFrame({"id": frame["id"], "a": 2 * frame["x0"], "b": 0.0}).to_csv("output/" + dst, index=False)
"""
REPLY = f"Title: a from x0, b constant\nPlan: x0 predicts a.\n```python\n{SCRIPT}```\n"


def _two_targets(root, n=200):
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=n)
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(n)], "x0": x0, "a": 2 * x0, "b": rng.normal(scale=5, size=n)})
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    frame.iloc[50:].to_csv(root / "public" / "train.csv", index=False)
    frame.iloc[:50][["id", "x0"]].to_csv(root / "public" / "test.csv", index=False)
    sample = pd.DataFrame({"id": frame["id"][:50], "a": 0.0, "b": 0.0})
    sample.to_csv(root / "public" / "sample_submission.csv", index=False)
    frame.iloc[:50][["id", "a", "b"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {
        "name": "two-targets", "task_type": "regression", "metric": "mcrmse", "id_column": "id",
        "target_columns": ["a", "b"], "submission_columns": ["id", "a", "b"],
    }  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text("# Two targets\nPredict a and b.\n")
    return root


def test_an_improve_prompt_shows_the_parents_holdout_score_on_each_target_column(tmp_path):
    cfg = load_config(None, ["sandbox.script_timeout_s=60", "brain.eda=false"])
    run = create_run(load_task(_two_targets(tmp_path / "t")), cfg, tmp_path / "runs")
    llm = ScriptedLLM(default=REPLY)
    brain = LLMBrain(llm, LLMBrainOptions(diff_mode=False))
    agent = Agent(open_session(run, brain))
    first = agent.step(Action(Op.DRAFT), 60)
    assert first.ok, first.failure
    agent.step(Action(Op.IMPROVE, (first.id,)), 60)
    prompt = llm.calls[-1]["messages"][-1].content
    answers = pd.read_csv(run.path / "sealed" / "holdout_answers.csv", dtype={"id": str})
    predicted = pd.read_csv(run.node_dir(first.id) / "output" / "holdout.csv", dtype={"id": str})
    merged = answers.merge(predicted, on="id", suffixes=("", "_pred"))
    rmse = {c: float(np.sqrt(((merged[c] - merged[f"{c}_pred"]) ** 2).mean())) for c in ("a", "b")}
    assert rmse["a"] < 1e-9 < rmse["b"]
    assert f"Holdout rmse per target column: a {rmse['a']:.5g}, b {rmse['b']:.5g}." in prompt
