"""A scripted brain: replays given proposals, then falls back to a tiny prior-predictor script.

It drives the tests and ``--dry-run``: the harness is exercised end to end (sandbox, scorer,
journal, best/) without any model or ML library beyond pandas.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from ..core.meta import NodeMeta
from ..core.protocols import Action, Context, Proposal
from ..core.vocabulary import Op

# Predicts from the training labels alone, for every task shape: it fills the harness's
# templates (which hold the ids and any key columns, such as the item of a ranked row) with
# the majority class, the class frequencies, the positive share, the mean, or the most
# frequent tokens of a ranked list. `shrink` blends toward a neutral value so improve steps
# produce different scores.
PRIOR_SCRIPT = '''\
"""Prior predictor: ignores the features, predicts from the training labels alone."""
import json
import os
from collections import Counter
from pathlib import Path

import pandas as pd

SHRINK = {shrink}
data = Path(os.environ["MLGUILD_DATA"])
task = json.loads((data / "task.json").read_text())
idc, targets, kind = task["id_column"], task["target_columns"], task["prediction_kind"]
train = pd.read_csv(data / task["train_file"], dtype=str, keep_default_na=False)
predicted = [c for c in task["submission_columns"][1:] if c in targets]
if not predicted:  # e.g. a ranking's score column for a relevance target: the last column
    predicted = task["submission_columns"][-1:]


def labels(column):
    values = train[column if column in train.columns else targets[0]]
    return values[values != ""]


def prior(column):
    values = labels(column)
    if kind == "probability":
        positive = task.get("positive_label") or "1"
        return (1 - SHRINK) * (values == positive).mean() + SHRINK * 0.5
    if kind == "value":
        return pd.to_numeric(values, errors="coerce").mean() * (1 - SHRINK)
    if kind == "label_set":
        counts = Counter(token for text in values for token in text.split())
        return counts.most_common(1)[0][0]
    if kind == "ranked_list":
        k = int(task.get("metric_params", {{}}).get("k", 5))
        counts = Counter(token for text in values for token in text.split())
        return " ".join(token for token, _ in counts.most_common(k))
    return values.mode().iloc[0]


def fill(template):
    out = template.copy()
    if kind == "class_probabilities":
        freq = labels(targets[0]).value_counts(normalize=True)
        for cls in task["classes"]:
            out[cls] = (1 - SHRINK) * freq.get(cls, 0.0) + SHRINK / len(task["classes"])
    else:
        for column in predicted:
            out[column] = prior(column)
    return out


os.makedirs("output", exist_ok=True)
read = lambda name: pd.read_csv(data / name, dtype=str, keep_default_na=False)
fill(read(task["holdout_sample_submission"])).to_csv("output/holdout.csv", index=False)
fill(read(task["sample_submission"])).to_csv("output/submission.csv", index=False)
print("cv_score: 0.5")
'''

Reply = Proposal | Callable[[Action, Context], Proposal]


class PriorMeta(NodeMeta, total=False):
    """A stand-in prior's meta: how far it shrinks towards the training prior."""

    shrink: float


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
            meta=PriorMeta(recipe="prior", shrink=shrink),
            title=f"{action.op.capitalize()}: prior predictor, shrink {shrink:.2f}",
        )
