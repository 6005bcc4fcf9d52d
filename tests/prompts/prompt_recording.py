"""A recorded run with the scripted LLM that asks for every kind of prompt once or more:
the brief, the idea extraction of a knowledge item, the exploration, its summary, two drafts (the second crashes), its repair, an improve near
the run's end, an evolve, a fuse, and the community cycle's draft, implementation, fix,
refinement (the model judges the fixed script done) and report.
``record_prompts`` returns each op's last prompt, made deterministic (measured durations and
temporary paths replaced), keyed by the golden file it is compared with, and every request as
it was sent."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import make_task

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.config import load_config
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.llm import ScriptedLLM
from mlguild.pools import Pools, fill_run_ideas
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.task.brief import ensure_brief
from mlguild.task.folder import load_task
from mlguild.task.knowledge import Item, store_items

GOLDEN = Path(__file__).parent / "golden"
LIMIT_S = 60  # the script limit of the recorded run
NEAR_END_S = 20  # the limit the improve gets: the run's end is near

BRIEF = """## Rules
- Predict y for every test row; the harness scores a sealed holdout with ROC AUC.
## Metric
ROC AUC rewards ranking the positive rows above the negative ones; calibration does not matter.
## Data notes
x0 is the strongest signal; x1 and x2 look like noise. No missing values, no duplicated ids.
## Promising directions
1. A logistic curve or logistic regression on x0.
2. Gradient-boosted trees on x0, x1 and x2 with early stopping.
3. Average a linear model and the trees.
"""

EDA = """Plan: print the sizes, the target's balance and each feature's correlation with it.
```python
import os
import pandas as pd
train = pd.read_csv(os.path.join(os.environ["MLGUILD_DATA"], "train.csv"))
print(f"rows: {len(train)}, columns: {list(train.columns)}")
print(f"target balance: {train['y'].mean():.2f} positive")
for column in ("x0", "x1", "x2"):
    print(f"correlation of {column} with y: {train[column].corr(train['y']):.2f}")
```
"""

# A knowledge item of the task (a forum post) and the ideas the model reads in it.
POST = Item(
    "", "post", "What worked", "someone", "grandmaster", 300, 0.91, "2021-01-01", "fixture://post",
    "A logistic model on the x0 feature is a strong baseline; x1 and x2 only add noise.",
)  # fmt: skip
IDEAS = '[{"idea": "a logistic model on x0 alone"}, {"idea": "leave x1 and x2 out"}]'

# The model's summary of what the exploration printed: the brief keeps it, not the output.
FINDINGS = """- 144 training rows; columns id, x0, x1, x2 and the target y, 44% positive.
- correlation of x0 with y: 0.72, the one strong signal; x1 (-0.07) and x2 (-0.11) carry almost none.
"""


def _script(weight: float, extra: str = "", crash: str = "") -> str:
    """A script that writes predictions from a logistic curve on x0 (``weight`` its slope)
    and prints its folds as a careful engineer's script would (fixed figures: the golden
    prompts must not change from run to run)."""
    return f"""
import math, os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
train = pd.read_csv(data / "train.csv", dtype={{"id": str}})
print(f"loaded {{len(train)}} training rows")
{crash}for fold in range(1, 6):
    print(f"fold {{fold}} of 5: roc_auc 0.9{{fold}}, fit 0.1 s")
print("folds completed: 5 of 5")
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={{"id": str}})
    score = {weight} * frame["x0"]{extra}
    pd.DataFrame({{"id": frame["id"], "y": 1 / (1 + (-score).map(math.exp))}}).to_csv("output/" + dst, index=False)
print("cv_score: 0.93")
"""


def _reply(title: str, plan: str, code: str) -> str:
    return f"Title: {title}\n{plan}\n```python\n{code}```\n"


DRAFT = _reply("Logistic curve on x0", "Plan: x0 separates the classes; a logistic curve on it, 5 folds.", _script(3))
CRASHING_DRAFT = _reply(
    "Curve on x0 and x9",
    "Plan: add x9, which the exploration did not see, to the curve.",
    _script(2, crash='train["x9"]\n'),
)
DEBUG = _reply(
    "Curve on x0 without x9", "x9 does not exist: drop it and keep the curve.", _script(2, " - 0.5 * frame['x2']")
)
IMPROVE = _reply(
    "Steeper curve on x0 and x2", "A steeper slope, and x2 with a small weight.", _script(4, " + 0.3 * frame['x2']")
)
EVOLVE = _reply(
    "Curve on x0 and x1",
    "The slope alone is exhausted: add x1 with a small weight.",
    _script(3, " + 0.2 * frame['x1']"),
)
FUSE = _reply("Average of two curves", "Average the slopes of both solutions.", _script(2.5))
CYCLE_DRAFT = """Draft: a logistic curve on x0 with a slope chosen by the folds.
The curve ranks by x0 alone, which the reports show carries the signal.
Components:
- a logistic curve on x0 [new]
- the slope chosen on 5 folds [new]
"""
CYCLE_CRASH = _reply("Curve with a chosen slope", "Implement the draft.", _script(3, crash="slope = best_slope\n"))
CYCLE_FIX = _reply("Curve with a chosen slope", "best_slope was never defined: use 3.5.", _script(3.5))
CYCLE_DONE = "DONE: every fold scores above 0.9; the draft has nothing left to tune."
REPORT = """{"method": "A logistic curve on x0 with its slope chosen on 5 folds.",
 "components": ["the curve on x0: all of the holdout score"],
 "results": "the harness's holdout score is below the best node's",
 "limitations": ["x1 and x2 are left out"],
 "next": ["add x2 to the curve with a small weight chosen on the folds"]}"""

# Each recorded request's purpose, and the golden file its prompt is compared with.
FILES = {
    "brief": "brief",
    "ideas": "ideas",
    "eda": "eda",
    "findings": "findings",
    "draft": "draft",
    "debug": "debug",
    "improve:diff": "improve",
    "evolve": "evolve",
    "fuse": "fuse",
    "cycle:draft": "cycle_draft",
    "cycle:implement": "cycle_implement",
    "cycle:fix": "cycle_fix",
    "cycle:refine": "cycle_refine",
    "report": "report",
}

_DURATION = re.compile(r"\b(\d+(?:\.\d+)?) s\b")
_RATIO = re.compile(r"×\d+(?:\.\d+)?")


def normalise(text: str, tmp: Path) -> str:
    """``text`` without what changes from run to run: temporary paths, and every duration
    but the limits the recorded run set (a measured run time is ``<t> s``)."""
    text = text.replace(str(tmp), "<tmp>")
    keep = {str(LIMIT_S), str(NEAR_END_S)}
    text = _DURATION.sub(lambda m: m.group(0) if m.group(1) in keep else "<t> s", text)
    return _RATIO.sub("×<r>", text)


def record_prompts(tmp: Path) -> tuple[dict[str, str], list[dict]]:
    """Run the recorded run in ``tmp``: ({golden file name: its prompt}, ``system`` included;
    every request, in order, as the scripted LLM recorded it)."""
    replies = [BRIEF, IDEAS, EDA, FINDINGS, DRAFT, CRASHING_DRAFT, DEBUG, IMPROVE, EVOLVE, FUSE]
    replies += [CYCLE_DRAFT, CYCLE_CRASH, CYCLE_FIX, CYCLE_DONE, REPORT]
    llm = ScriptedLLM(replies, default=None)
    sets = [f"sandbox.script_timeout_s={LIMIT_S}", "search.num_drafts=2", "brain.eda=true"]
    cfg = load_config(None, sets)
    run = create_run(load_task(make_task(tmp / "task", n=240)), cfg, tmp / "runs", run_id="golden")
    ensure_brief(run.path, run.spec, run.profile, run.description, llm)
    # The ideas are read into pools of their own: the run's prompts stay those of a run without them.
    store_items(run.task_root, [POST], None)
    (tmp / "ideas").mkdir()
    elsewhere = Pools.open(tmp / "ideas")
    fill_run_ideas(run, elsewhere, llm)
    elsewhere.close()
    brain = LLMBrain(llm, LLMBrainOptions(threads=2))
    agent = Agent(open_session(run, brain))
    agent.step(Action(Op.EDA, (), "explore the data before the first draft"), LIMIT_S)
    first = agent.step(Action(Op.DRAFT, (), "draft 1 of 2"), LIMIT_S)
    broken = agent.step(Action(Op.DRAFT, (), "draft 2 of 2"), LIMIT_S)
    repaired = agent.step(Action(Op.DEBUG, (broken.id,), f"repair {broken.id} ({broken.status})"), LIMIT_S)
    agent.step(Action(Op.IMPROVE, (first.id,), f"UCT: improve {first.id} (progress 40%)"), NEAR_END_S)
    agent.step(Action(Op.EVOLVE, (first.id,), "stagnant: evolve from the branch's trajectory"), LIMIT_S)
    agent.step(Action(Op.FUSE, (first.id, repaired.id), "stagnant: fuse the best of two branches"), LIMIT_S)
    agent.session.brain = LLMBrain(llm, LLMBrainOptions(threads=2, cycle=True))
    agent.step(Action(Op.DRAFT, (), "periodic fresh draft"), LIMIT_S)
    prompts = {FILES[c["purpose"]]: c["messages"][-1].content for c in llm.calls if c["purpose"] in FILES}
    prompts["system"] = llm.calls[-2]["messages"][0].content  # the exploration's findings included
    assert set(prompts) == {*FILES.values(), "system"}, sorted(prompts)
    return {name: normalise(text, tmp) for name, text in prompts.items()}, llm.calls
