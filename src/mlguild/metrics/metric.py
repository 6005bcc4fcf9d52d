"""What a metric is: its function, direction, the kind of prediction it scores and how the
Scorer converts its truth (the registry of named metrics is mlguild.metrics)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mlguild.core.errors import ConfigError
from mlguild.core.score import Direction

Prediction = Literal["label", "probability", "class_probabilities", "value", "ranked_list", "label_set"]
# How the Scorer converts the truth column(s) before calling ``fn``:
#   label: exact strings; integer: ints (and predictions must be ints too);
#   binary: 0/1 via the positive label; class: index into the class columns;
#   value: floats; tokens: list of space-separated tokens per row.
Truth = Literal["label", "integer", "binary", "class", "value", "tokens"]

_DEFAULT_TRUTH: dict[str, str] = {
    "label": "label",
    "probability": "binary",
    "class_probabilities": "class",
    "value": "value",
    "ranked_list": "tokens",
    "label_set": "tokens",
}


@dataclass(frozen=True)
class Metric:
    """A named metric: its function, direction and the kind of prediction it scores.

    ``truth`` says how the Scorer converts the truth column (defaults from ``prediction``);
    ``params`` names the keyword parameters ``fn`` accepts, so a typo in a task's metric
    parameters is a clear error rather than a silently ignored option.
    """

    name: str
    direction: Direction
    prediction: Prediction
    fn: Callable[..., float] = field(repr=False)
    description: str
    truth: Truth | None = None
    params: tuple[str, ...] = ()
    perfect: float | None = None
    """The best value the metric can take; None means 1 when maximized, 0 when minimized
    (true of every metric registered here). Reaching it on a holdout is flagged as a possible leak."""
    free_text: bool = False
    """A ``label`` metric whose predictions are free text (an extracted phrase), not classes:
    any text is a valid prediction, an empty one included."""
    strata: bool = False
    """A grouped metric whose groups are a few strata of the rows named by an input column
    (``metric_params.group_column``: CHAMPS' coupling types), not queries to rank within:
    no ranking task, and a bootstrap draws rows within each stratum, not whole groups."""

    def __post_init__(self) -> None:
        if self.direction not in ("maximize", "minimize"):
            raise ValueError(f"metric {self.name!r}: direction must be maximize or minimize")
        if self.prediction not in _DEFAULT_TRUTH:
            raise ValueError(f"metric {self.name!r}: unknown prediction kind {self.prediction!r}")
        if self.truth is None:
            object.__setattr__(self, "truth", _DEFAULT_TRUTH[self.prediction])
        if self.perfect is None:
            object.__setattr__(self, "perfect", 1.0 if self.direction == "maximize" else 0.0)

    @property
    def grouped(self) -> bool:
        """True when the metric needs a ``groups`` array (one group id per row)."""
        return "groups" in self.params

    @property
    def ranks_within_groups(self) -> bool:
        """True when the groups are queries whose rows are ranked within them (GAUC, nDCG)."""
        return self.grouped and not self.strata

    def __call__(self, y_true: Any, y_pred: Any, **params: Any) -> float:
        unknown = set(params) - set(self.params)
        if unknown:
            raise ConfigError(
                f"metric {self.name!r} does not take parameter(s) {sorted(unknown)}; "
                f"it takes {list(self.params) or 'none'}",
                fix="correct metric_params in task.yaml",
            )
        return float(self.fn(y_true, y_pred, **params))
