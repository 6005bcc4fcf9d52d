"""Prompts are data: Jinja templates in ``mlguild/prompts``, rendered strictly.

A variable the template uses but the caller did not pass is an error, never an empty string:
a prompt silently missing its task description is the worst kind of bug, because the model
still answers.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

PROMPTS_DIR = Path(__file__).parent  # the templates sit beside this module

PREDICTION_HELP = {
    "probability": "one column, the probability of the positive class{positive} (a float in [0, 1])",
    "label": "the predicted class label, spelled exactly as in the training target",
    "class_probabilities": "one column per class ({classes}), each row a probability distribution summing to 1",
    "value": "numeric predictions of the target",
    "ranked_list": "space-separated predicted items, best first, each item at most once",
    "label_set": "the predicted set of labels, space-separated (order does not matter), each label at most once",
}


# What each column holds when a task has several targets (multi-target regression, multi-label).
_EACH_TARGET = {
    "probability": "the probability of the positive class{positive} for that column (a float in [0, 1])",
    "label": "that column's label{positive} or the other one, spelled exactly as in the training file",
    "value": "the numeric prediction of that target",
}


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, **variables) -> str:
    """Render ``prompts/<name>.j2``. Raises jinja2.UndefinedError for a missing variable."""
    return _env().get_template(f"{name}.j2").render(**variables).strip() + "\n"


def prediction_help(task: dict) -> str:
    """How predictions must look for this task's metric, in one sentence."""
    kind = task.get("prediction_kind", "value")
    positive = f" ({task['positive_label']!r})" if task.get("positive_label") else ""
    classes = ", ".join(task.get("classes") or [])
    targets = task.get("target_columns") or []
    if len(targets) > 1 and kind in _EACH_TARGET:  # several targets: a column of the submission each
        each = _EACH_TARGET[kind].format(positive=positive)
        return f"one column per target ({', '.join(targets)}), each holding {each}; the metric scores each column and averages"
    text = PREDICTION_HELP.get(kind, "predictions in the sample submission's format").format(
        positive=positive, classes=classes
    )
    group = task.get("group_column") or (task.get("id_column") if not task.get("ids_unique", True) else None)
    if task.get("ranked_file"):  # no score column: the order of the rows is the prediction
        return (
            f"no score column: the sample submission's rows (columns {task['submission_columns']}, copied), each "
            f"{group!r} group's rows in ranked order, best first; the metric scores a row by its place in its group"
        )
    if task.get("key_columns"):  # a grouped ranking: the score column is what is predicted
        text += f"; one score per row, higher ranks first (the key columns {task['key_columns']} are copied)"
        if task.get("group_column"):
            text += f"; rows are ranked within each {task['group_column']!r}"
    return text
