"""Which ranking tasks the recipes serve: grouped ranking (a score per (group, item) row,
templates/rank.py.j2) and ranked lists (a space-separated list per query row)."""

from __future__ import annotations

from typing import Any

from ...metrics import get_metric


def ranking_supported(task: dict[str, Any]) -> bool:
    """A ranking task the recipes can write scripts for: one target, and either a grouped
    metric over one score column or a ranked file (the groups: a group_column, or the
    id where ids repeat), or a ranked list."""
    if len(task["target_columns"]) != 1:
        return False
    metric = get_metric(task["metric"])
    if metric.prediction == "ranked_list":
        return bool(task.get("ids_unique", True))  # a row per query: the candidate generator
    return metric.ranks_within_groups and (task.get("group_column") is not None or not task.get("ids_unique", True))
