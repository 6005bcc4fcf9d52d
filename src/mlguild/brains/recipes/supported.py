"""Which tasks the recipe scripts can serve: a ranking they have recipes for, and a
submission whose prediction columns the templates fill (one per target, or one per class).
A task they cannot serve is refused with the fix (another brain), not drafted."""

from __future__ import annotations

from typing import Any

from ...core.errors import MoveUnavailable
from ...metrics import get_metric
from .ranking import ranking_supported
from .render import prediction_kind


def check_supported(task: dict[str, Any]) -> None:
    """Raise ``MoveUnavailable`` (with the fix) when the recipe scripts cannot serve ``task``."""
    fix = "use a brain that writes its own code for this task (not --brain recipes)"
    if task["task_type"] == "ranking" and not ranking_supported(task):
        raise MoveUnavailable("the recipe brain has no recipes for this ranking task", fix)
    if get_metric(task["metric"]).free_text and (len(task["target_columns"]) != 1 or task.get("key_columns")):
        raise MoveUnavailable(  # the span recipes write one phrase a row, keyed by the id alone
            f"the recipe brain writes one free-text phrase a row (the metric {task['metric']}), keyed by its id; "
            f"this task has the targets {task['target_columns']} and the key columns {task.get('key_columns') or []}",
            fix,
        )
    if len(task["target_columns"]) != 1:
        _check_several_targets(task, fix)
        return
    kind, n_pred = prediction_kind(task), len(task["submission_columns"]) - 1 - len(task.get("key_columns") or [])
    if task.get("ranked_file"):  # the rows' order is the prediction: no column to fill
        return
    n_classes = len(task.get("classes") or task["submission_columns"][1:])
    if n_pred != (n_classes if kind == "class_probabilities" else 1):
        raise MoveUnavailable(f"the recipe brain cannot fill {n_pred} prediction columns for a {kind!r} metric", fix)


def _check_several_targets(task: dict[str, Any], fix: str) -> None:
    """Several targets: one submission column per target (values, or a probability or a label
    per binary label column); the multi-target template fills exactly those."""
    targets, kind = task["target_columns"], prediction_kind(task)
    if sorted(targets) != sorted(task["submission_columns"][1:]):
        raise MoveUnavailable(
            f"the recipe brain fills one submission column per target; this task's submission has "
            f"{task['submission_columns'][1:]} for the targets {targets}",
            fix,
        )
    wanted = {"regression": ("value",), "binary": ("probability", "label")}.get(task["task_type"], ())
    if kind not in wanted:
        raise MoveUnavailable(
            f"the recipe brain handles several targets of a regression task (values) or a binary one "
            f"(multi-label: probabilities or labels per column); this is a {task['task_type']} task "
            f"with a {kind!r} metric",
            fix,
        )
