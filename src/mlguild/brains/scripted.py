"""A scripted brain: replays given proposals, then falls back to a tiny prior-predictor script.

It drives the tests and ``--dry-run``: the harness is exercised end to end (sandbox, scorer,
journal, best/) without any model or ML library beyond pandas.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from ..core.protocols import Action, Context, Proposal
from ..core.vocabulary import Op

# Predicts from the training labels alone: the majority class, the class frequencies, or the
# mean. `shrink` blends toward a neutral value so improve steps produce different scores.
PRIOR_SCRIPT = '''\
"""Prior predictor: ignores the features, predicts from the training labels alone."""
import json
import os
from pathlib import Path

import pandas as pd

SHRINK = {shrink}
data = Path(os.environ["MLGUILD_DATA"])
task = json.loads((data / "task.json").read_text())
idc, target, kind = task["id_column"], task["target_columns"][0], task["prediction_kind"]
train = pd.read_csv(data / task["train_file"], dtype={{idc: str}})


def predict(rows):
    keys = task.get("key_columns", [])  # a ranking's item columns: copied, never predicted
    out = rows[[idc, *keys]].copy()
    labels = train[target].astype(str)
    if kind == "probability":
        positive = task.get("positive_label") or "1"
        p = (labels == positive).mean()
        out[task["submission_columns"][1]] = (1 - SHRINK) * p + SHRINK * 0.5
    elif kind == "class_probabilities":
        freq = labels.value_counts(normalize=True)
        for cls in task["classes"]:
            out[cls] = (1 - SHRINK) * freq.get(cls, 0.0) + SHRINK / len(task["classes"])
    elif kind == "value":
        for col in [c for c in task["submission_columns"][1:] if c not in keys]:
            out[col] = pd.to_numeric(train[col] if col in train else train[target]).mean() * (1 - SHRINK)
    else:
        out[task["submission_columns"][1]] = labels.mode().iloc[0]
    return out[task["submission_columns"]]


os.makedirs("output", exist_ok=True)
text = {{c: str for c in [idc, *task.get("key_columns", [])]}}
holdout = pd.read_csv(data / task["holdout_file"], dtype=text)
test = pd.read_csv(data / task["test_file"], dtype=text)
predict(holdout).to_csv("output/holdout.csv", index=False)
predict(test).to_csv("output/submission.csv", index=False)
print("cv_score: 0.5")
'''

Reply = Proposal | Callable[[Action, Context], Proposal]


class ScriptedBrain:
    """Answers from a queue of replies (Proposals or callables); then from the prior script."""

    name = "scripted"

    def __init__(self, replies: Iterable[Reply] = ()):
        self.replies: deque[Reply] = deque(replies)
        self.calls: list[Action] = []

    def propose(self, action: Action, context: Context) -> Proposal:
        self.calls.append(action)
        if self.replies:
            reply = self.replies.popleft()
            return reply(action, context) if callable(reply) else reply
        # Each improve shrinks less toward the neutral value, so later nodes differ measurably.
        shrink = 0.5 if action.op == Op.DRAFT else max(0.0, 0.5 - 0.1 * (context.iteration % 6))
        return Proposal(
            plan=f"{action.op}: prior predictor with shrink {shrink:.2f} ({action.reason})",
            # numbered by the node's iteration: two workers' stand-ins are distinct scripts
            code=f"# stand-in for node {context.iteration + 1}\n" + PRIOR_SCRIPT.format(shrink=shrink),
            meta={"recipe": "prior", "shrink": shrink},
            title=f"{action.op.capitalize()}: prior predictor, shrink {shrink:.2f}",
        )
