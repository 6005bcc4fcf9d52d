"""A weighted mean of registered metrics, named in task.yaml as ``mean(gauc, ndcg@5)`` or
``mean(0.7*gauc, 0.3*ndcg@5)``: how a competition that scores with two metrics at once (the
within-user ranking one: the mean of GAUC and nDCG@5) is written. Its parts share a direction
and a prediction kind; a part's cut-off is its ``@k``. ``mlguild.metrics.get_metric`` builds one
from its name; the name it stores is the canonical spelling (registered part names)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

_PART = re.compile(r"^(?:(?P<w>[0-9]*\.?[0-9]+)\s*\*\s*)?(?P<name>[A-Za-z_][\w -]*?)(?:\s*@\s*(?P<k>[0-9]+))?$")


def is_combined(name: str) -> bool:
    return name.strip().casefold().startswith("mean(")


@dataclass(frozen=True)
class Part:
    name: str  # a registered metric
    weight: float
    k: int | None

    def spelled(self, weighted: bool) -> str:
        text = self.name + (f"@{self.k}" if self.k is not None else "")
        return f"{self.weight:g}*{text}" if weighted else text


def parse(name: str, canonical: Callable[[str], str]) -> list[Part]:
    """The parts of ``mean(...)``; ValueError naming the part that is wrong. ``canonical`` maps a
    user's metric name to the registered one (raising for an unknown name)."""
    text = name.strip()
    if not text.endswith(")") or not is_combined(text):
        raise ValueError(f"{name!r}: write a mean of metrics as mean(gauc, ndcg@5) or mean(0.7*gauc, 0.3*ndcg@5)")
    parts = []
    for raw in text[text.index("(") + 1 : -1].split(","):
        found = _PART.match(raw.strip())
        if found is None:
            raise ValueError(f"{raw.strip()!r} in {name!r} is not a metric: write NAME, NAME@K or WEIGHT*NAME@K")
        if is_combined(found["name"]):
            raise ValueError(f"{name!r}: a mean of metrics cannot hold another mean")
        weight = float(found["w"]) if found["w"] else 1.0
        if weight <= 0:
            raise ValueError(f"{raw.strip()!r} in {name!r}: a weight must be above 0")
        parts.append(Part(canonical(found["name"]), weight, int(found["k"]) if found["k"] else None))
    if len(parts) < 2:
        raise ValueError(f"{name!r} names {len(parts)} metric: a mean needs two or more")
    return parts


def spelled(parts: list[Part]) -> str:
    """The canonical name: weights shown only when they differ."""
    weighted = len({p.weight for p in parts}) > 1
    return "mean(" + ", ".join(p.spelled(weighted) for p in parts) + ")"


def mean_of(parts: list[Part], metrics: list[Any], truth_is_value: bool) -> Callable[..., float]:
    """The function of the mean: each part scored on the same predictions (with the groups when
    it is grouped) and the weighted mean taken. Where truths are values, a part that scores a
    binary truth (GAUC) reads a value above 0 as relevant."""
    total = sum(p.weight for p in parts)

    def fn(y_true: Any, y_pred: Any, groups: Any = None) -> float:
        value = 0.0
        for part, metric in zip(parts, metrics):
            truth = y_true
            if truth_is_value and metric.truth == "binary":
                truth = (np.asarray(y_true, dtype=np.float64) > 0).astype(np.int8)
            params: dict[str, Any] = {}
            if part.k is not None:
                params["k"] = part.k
            if metric.grouped:
                if groups is None:
                    raise ValueError(f"{metric.name} in a mean of metrics needs the groups")
                params["groups"] = groups
            value += part.weight * metric(truth, y_pred, **params)
        return value / total

    return fn
