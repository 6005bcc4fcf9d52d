"""A competition folder's description: its text (description.md at the folder's root or beside
the data), one written for a folder that has none, the task name a folder gives, and the
positive label a description names where it asks for a probability."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .columns import positive_label


def has_description(root: Path, data_dir: Path) -> bool:
    return (root / "description.md").is_file() or (data_dir / "description.md").is_file()


def description_text(root: Path, data_dir: Path) -> str:
    for path in (root / "description.md", data_dir / "description.md"):
        if path.is_file():
            return path.read_text(encoding="utf-8", errors="replace")
    return ""


def generated_description(folder: Path, targets: list[str], metric: str) -> str:
    return (
        f"# {folder_task_name(folder)}\n\nA competition folder without a description. Predict {', '.join(targets)} "
        f"for every row of the test file, in the format of the sample submission. Metric: {metric}.\n"
    )


def folder_task_name(folder: Path) -> str:
    parts = [p for p in folder.resolve().parts if p not in ("prepared", "public", "/")]
    return re.sub(r"[^\w.-]+", "-", parts[-1] if parts else "task").strip(".-") or "task"


def described_positive(description: str, target: pd.Series, notes: list[str]) -> str:
    """The positive label of a binary target: the one the description asks the probability of,
    else the usual guess (``columns.positive_label``), saying which in ``notes``."""
    positive = label_after_probability(description, sorted(set(target) - {""}))
    if positive is not None:
        notes.append(f"positive label {positive!r}: the description asks for its probability")
        return positive
    positive = positive_label(target)
    notes.append(
        f"positive label {positive!r} (the description does not say which class is predicted; "
        "set positive_label in task.yaml if it is the other)"
    )
    return positive


def label_after_probability(description: str, labels: list[str]) -> str | None:
    """The one label named shortly after "probability" in the description, if exactly one is."""
    named = set()
    for found in re.finditer(r"probabilit(y|ies)\b(.{0,80})", description, re.IGNORECASE | re.DOTALL):
        for label in labels:
            if re.search(rf"\b{re.escape(label)}\b", found.group(2), re.IGNORECASE):
                named.add(label)
    return named.pop() if len(named) == 1 else None
