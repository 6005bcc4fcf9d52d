"""Repairs: what the recipe brain changes after a script failed, read from the failure itself.

A recipe script names the step and column it failed in (``mlguild.coder.diagnose``), so a repair
can change exactly that: leave out the column a step failed on, or switch off the optional
feature group that failed. What no repair explains falls back to the safest pipeline.
Repairs are kept in the meta (``features.drop_columns`` and the feature switches), so the
next drafts and improvements on this task inherit what was learned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...coder.diagnose import Diagnosis
from ...core.protocols import Context
from ...core.vocabulary import Status
from ...task.column_kinds import UNUSABLE
from .catalog import FALLBACK, recipe_modality
from .draft import draft_meta
from .recipe import RecipeMeta

Meta = RecipeMeta

# Optional feature groups a failing step can be switched off by: step -> (feature, value when off).
_OPTIONAL_STEPS: dict[str, tuple[str, Any]] = {
    "ratios": ("ratios", False),
    "freq_encoding": ("freq_encoding", False),
    "target_encoding": ("target_encoding", False),
    "svd": ("text", "stats"),
    "screen": ("screen", 0),
}
REPAIR_MOVES = ("drop_column", *(f"skip_{step}" for step in _OPTIONAL_STEPS))
SAFEST = "safest"


@dataclass(frozen=True)
class Repair:
    """A targeted change to a recipe meta, and why it should fix the failure."""

    move: str
    why: str
    column: str | None = None
    feature: tuple[str, Any] | None = None

    def apply(self, meta: Meta) -> None:
        features = meta["features"]
        if self.column is not None:
            features["drop_columns"] = [*(features.get("drop_columns") or []), self.column]
        if self.feature is not None:
            features[self.feature[0]] = self.feature[1]


def repair_for(meta: Meta, diagnosis: Diagnosis, columns: list[str]) -> Repair | None:
    """The targeted repair of a recipe meta whose script failed as ``diagnosis`` says, or
    None when the failure points at no column or optional step this meta still uses."""
    features = meta["features"]
    cause = diagnosis.summary()
    if diagnosis.column in columns and diagnosis.column not in (features.get("drop_columns") or []):
        return Repair(
            "drop_column", f"{cause}; so the column {diagnosis.column!r} is left out", column=diagnosis.column
        )
    step = diagnosis.step or ""
    if step in _OPTIONAL_STEPS:
        key, off = _OPTIONAL_STEPS[step]
        if key in features and features[key] != off:
            return Repair(
                f"skip_{step}", f"{cause}; so the optional {step} features are switched off", feature=(key, off)
            )
    return None


def learned(history: tuple[Any, ...]) -> dict[str, Any]:
    """What earlier repairs on this task found: the columns left out and the feature groups
    switched off, so a new draft does not fail the same way again."""
    drop: list[str] = []
    switches: dict[str, Any] = {}
    for item in history:
        meta = item.meta or {}
        move = meta.get("move") or ""
        if meta.get("brain") != "recipes" or not (move in REPAIR_MOVES or move == SAFEST):
            continue
        drop += [c for c in meta.get("features", {}).get("drop_columns") or [] if c not in drop]
        for step, (key, off) in _OPTIONAL_STEPS.items():
            if move == f"skip_{step}":
                switches[key] = off
    return {"drop_columns": drop, "switches": switches}


def apply_learned(meta: Meta, lessons: dict[str, Any]) -> list[str]:
    """Apply earlier repairs to a fresh meta; returns what was applied, for the plan."""
    features, notes = meta["features"], []
    new = [c for c in lessons["drop_columns"] if c not in (features.get("drop_columns") or [])]
    if new:
        features["drop_columns"] = [*(features.get("drop_columns") or []), *new]
        notes.append(f"leaves out {', '.join(map(repr, new))} (an earlier repair found a step failing on it)")
    for key, off in lessons["switches"].items():
        if key in features and features[key] != off:
            features[key] = off
            notes.append(f"keeps `{key}` = {off!r} (an earlier repair switched it off)")
    return notes


def safest_meta(context: Context) -> Meta:
    """The safest pipeline for the task's modality: the most robust recipe at its defaults,
    with every optional feature group off and a column that fails to parse left out
    instead of failing the script (``features.safe``); a model that accepts missing values."""
    task, profile = context.task, context.profile
    meta = draft_meta(FALLBACK.get(recipe_modality(task), "hist_gb"), task, profile)
    meta["features"]["safe"] = True
    apply_learned(meta, learned(context.history))
    meta["last_resort"] = True  # LAST_RESORT
    return meta


def repeated_failure(context: Context, times: int = 3) -> str | None:
    """The failure the last ``times`` nodes share (their last failure line), or None: the
    sign that drafting more of the same will fail again."""
    recent = context.history[-times:]
    if len(recent) < times or any(h.status == Status.SCORED for h in recent):
        return None
    lines = {_last_line(h.failure) for h in recent}
    return lines.pop() if len(lines) == 1 and "" not in lines else None


def usable_columns(profile: dict[str, Any]) -> list[str]:
    return [c["name"] for c in profile.get("columns", []) if c["kind"] not in UNUSABLE]


def _last_line(text: str | None) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
