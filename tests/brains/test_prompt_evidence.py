"""Every LLM request doing work (issue 39), over the scripted LLM and the real loop, sandbox,
scorer and journal: a draft is reviewed and a small edit of a working script is not (unless
its branch's last node failed), a review of an edit reads the sections it touched, the improve
prompt shows the per-fold scores with their spread, where the parent errs (from its
out-of-fold file) and its code uncut, and every request after the brief starts with the same
system turn, byte for byte."""

from __future__ import annotations

import json

import pandas as pd
from conftest import make_task

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.config import load_config
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.llm import ScriptedLLM
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task
from mlguild.view.reviews import review_tally, reviews_line

LIMIT_S = 60

# A regression script in sections; its out-of-fold predictions are 4 too high for one region,
# which the harness's breakdown must find. Each fold's score is printed as the contract says.
SCRIPT = '''
# ---------------------------------------------------------------- load
import os
from pathlib import Path
import numpy as np
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
train = pd.read_csv(data / "train.csv", dtype={"id": str})
# ---------------------------------------------------------------- features
def features(frame):
    """x0 and the region as a number: the columns the model reads."""
    out = pd.DataFrame({"x0": frame["x0"]})
    out["region_code"] = frame["region"].map({"north": 0, "south": 1, "east": 2})
    return out
# ---------------------------------------------------------------- model
SLOPE = 3.0
def predict(frame):
    return 10 + SLOPE * features(frame)["x0"]
oof = predict(train) + np.where(train["region"] == "east", 4.0, 0.0)
for fold in range(5):
    print(f"fold {fold}: score {1.1 + fold / 10:.3f}, 0.1 s")
print("folds completed: 5 of 5")
pd.DataFrame({"id": train["id"], "y": oof}).to_csv("output/oof.csv", index=False)
# ---------------------------------------------------------------- write
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    pd.DataFrame({"id": frame["id"], "y": predict(frame)}).to_csv("output/" + dst, index=False)
print("cv_score: 1.3")
'''
DRAFT = f"Title: Line on x0\nPlan: a straight line on x0.\n```python\n{SCRIPT}```\n"
PASS = "VERDICT: pass\n"
SMALL_EDIT = """Title: Steeper line on x0
A steeper slope.
<<<<<<< SEARCH
SLOPE = 3.0
=======
SLOPE = 3.1
>>>>>>> REPLACE
"""
CRASHING_EDIT = """Title: Line with a missing column
Add x9.
<<<<<<< SEARCH
SLOPE = 3.0
=======
SLOPE = 3.0 + train["x9"].mean()
>>>>>>> REPLACE
"""


def _task(root):
    """The small regression task with a categorical column, ``region``."""
    task = make_task(root, n=400, task_type="regression", metric="rmse")
    for name in ("train.csv", "test.csv"):
        path = task / "public" / name
        frame = pd.read_csv(path, dtype={"id": str})
        frame.insert(1, "region", [("north", "south", "east")[i % 3] for i in range(len(frame))])
        frame.to_csv(path, index=False)
    return task


def _agent(tmp_path, llm):
    sets = [f"sandbox.script_timeout_s={LIMIT_S}", "brain.eda=false", "final.reference_models=false"]
    cfg = load_config(None, sets)
    run = create_run(load_task(_task(tmp_path / "task")), cfg, tmp_path / "runs", run_id="evidence")
    brain = LLMBrain(llm, LLMBrainOptions(threads=2, diff_mode=True, review=True))
    return Agent(open_session(run, brain, get_sandbox(cfg.sandbox.kind))), run


def test_reviews_where_they_pay_and_an_improve_prompt_with_its_evidence(tmp_path):
    llm = ScriptedLLM([DRAFT, PASS, SMALL_EDIT, CRASHING_EDIT, SMALL_EDIT, PASS], default=None)
    agent, run = _agent(tmp_path, llm)
    draft = agent.step(Action(Op.DRAFT, (), "draft 1 of 1"), LIMIT_S)
    assert draft.ok, draft.failure
    small = agent.step(Action(Op.IMPROVE, (draft.id,), f"improve {draft.id}"), LIMIT_S)
    crashed = agent.step(Action(Op.IMPROVE, (draft.id,), f"improve {draft.id}"), LIMIT_S)
    after_failure = agent.step(Action(Op.IMPROVE, (draft.id,), f"improve {draft.id}"), LIMIT_S)
    purposes = [c["purpose"] for c in llm.calls]
    # The draft is reviewed, the small edits are not; but once one crashed, the branch's last
    # node failed, and the next small edit is reviewed.
    assert purposes == ["draft", "review", "improve:diff", "improve:diff", "improve:diff", "review"]
    assert draft.meta["review"]["status"] == "passed" and draft.meta["review"]["scope"] == "script"
    assert small.meta["review"]["status"] == "skipped" and "small edit (1 lines)" in small.meta["review"]["note"]
    assert not crashed.ok and crashed.meta["review"]["status"] == "skipped"
    assert after_failure.meta["review"]["status"] == "passed"

    # A review of an edit reads the sections it touched, whole, with the changed line marked,
    # and not the rest of the script again.
    edit_review = llm.calls[-1]["messages"][-1].content
    assert "# The change" in edit_review and "|+ SLOPE = 3.1" in edit_review and "|- SLOPE = 3.0" in edit_review
    assert "def predict(frame):" in edit_review  # the model section, whole
    assert "def features(frame):" not in edit_review and "holdout.csv" not in edit_review.split("# The change")[1]
    draft_review = llm.calls[1]["messages"][-1].content
    assert "# The script (numbered lines)" in draft_review and "def features(frame):" in draft_review

    # The improve prompt: per-fold scores with their spread, where the parent errs (the east
    # region, from its out-of-fold file on the training labels), and the feature section uncut.
    improve = llm.calls[2]["messages"][-1].content
    assert "Per-fold rmse (printed by the script, untrusted): 1.1, 1.2, 1.3, 1.4, 1.5" in improve
    assert "spread (sd) 0.16" in improve
    assert "Where it errs" in improve and "never the holdout's" in improve
    assert "Worst deciles of the prediction" in improve
    assert "region = 'east' (78 rows), mean |error| 3.938 against 1.551 overall, bias +3.938" in improve
    # The harness read only the training columns the breakdown needs (ids, labels, categories),
    # not the whole file: ten million rows of it held 5 GB for the rest of a run.
    held = agent.session.contexts.evidence._labels()
    assert sorted(held.columns) == ["id", "region", "y"]
    features = SCRIPT[SCRIPT.index("# ----") :].split("# ----")[2]
    assert features.strip() in improve  # the whole feature section, every column it names

    # Every request starts with the same system turn, byte for byte: the run's stable prefix.
    systems = {c["messages"][0].content for c in llm.calls}
    assert len(systems) == 1 and all(c["messages"][0].role == "system" for c in llm.calls)

    # The run's tally of reviews: asked, what they changed, and the skipped small edit.
    tally = review_tally(agent.session.state.graph, run.journal.records, "minimize")
    assert (tally["asked"], tally["passed"], tally["revised"], tally["skipped"]) == (2, 2, 0, 2)
    assert "2 asked (2 passed, 0 revised" in reviews_line(tally) and "2 small edits not reviewed" in reviews_line(tally)
    run.close()


def test_a_member_of_a_blend_is_shown_its_blend_and_a_blend_its_members(tmp_path):
    other = DRAFT.replace("SLOPE = 3.0", "SLOPE = 2.5").replace("Line on x0", "Flatter line on x0")
    evolved = DRAFT.replace("SLOPE = 3.0", "SLOPE = 3.2").replace("Line on x0", "Line on x0, evolved")
    fused = DRAFT.replace("SLOPE = 3.0", "SLOPE = 2.8").replace("Line on x0", "Average of two lines")
    llm = ScriptedLLM([DRAFT, other, SMALL_EDIT, evolved, fused], default=None)
    agent, run = _agent(tmp_path, llm)
    agent.session.brain = LLMBrain(llm, LLMBrainOptions(threads=2, diff_mode=True))  # no reviews here
    first = agent.step(Action(Op.DRAFT, (), "draft 1 of 2"), LIMIT_S)
    second = agent.step(Action(Op.DRAFT, (), "draft 2 of 2"), LIMIT_S)
    blend = agent.step(Action(Op.BLEND, (first.id, second.id), "blend the best of two branches"), LIMIT_S)
    assert blend.ok, blend.failure
    agent.step(Action(Op.IMPROVE, (first.id,), f"improve {first.id}"), LIMIT_S)
    improve = llm.calls[-1]["messages"][-1].content
    # A member's weight where the selection predicted; a stacker (it may win on these lines) has none.
    selected = (
        json.loads((run.node_dir(blend.id) / "output" / "fuse_weights.json").read_text())["method"] == "selection"
    )
    feeds = f"It feeds the blend {blend.id} with weight " if selected else f"It feeds the blend {blend.id} (members "
    assert feeds in improve and "decides its weight" in improve
    graph = agent.session.state.graph
    shown = agent.session.contexts.parent_view(graph, graph[blend.id]).evidence
    start = f"It is a blend of {first.id} (weight " if selected else f"It is a blend of {first.id}, {second.id}:"
    assert any(line.startswith(start) for line in shown), shown
    assert any("fitted on its members' out-of-fold predictions" in line for line in shown)

    # An evolve and a fuse show the same evidence of their parents as an improve (issue 39):
    # the per-fold scores with their spread, where each errs, the blend it feeds.
    agent.step(Action(Op.EVOLVE, (first.id,), f"evolve {first.id}"), LIMIT_S)
    evolve = llm.calls[-1]["messages"][-1].content
    assert llm.calls[-1]["purpose"] == "evolve" and "### What the harness measured of it" in evolve
    assert "Per-fold rmse (printed by the script, untrusted): 1.1, 1.2, 1.3, 1.4, 1.5" in evolve
    assert "Worst deciles of the prediction" in evolve and "region = 'east'" in evolve
    assert feeds in evolve
    agent.step(Action(Op.FUSE, (first.id, second.id), "fuse two branches"), LIMIT_S)
    fuse = llm.calls[-1]["messages"][-1].content
    assert llm.calls[-1]["purpose"] == "fuse"
    for parent in (first.id, second.id):
        shown = fuse.split(f"### What the harness measured of {parent}\n", 1)[1].split("```python", 1)[0]
        assert "Per-fold rmse" in shown and "Where it errs" in shown and f"It feeds the blend {blend.id}" in shown
    run.close()
