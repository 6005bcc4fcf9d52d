"""What the memory shows a brain, as plain values: the records recalled for one proposal
(``Recall``), what a recipe move or family did on similar tasks (``MovePrior``) and the best
configurations of earlier runs on this task (``EarlierBest``). They live in ``core`` because
the brains' ``Context`` (``core.protocols``) carries them; ``mlguild.memory`` computes them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recall:
    """What a brain is shown before one proposal, each record as one bounded line."""

    this_run: tuple[str, ...] = ()
    other_tasks: tuple[str, ...] = ()
    transfer: str = ""  # how far another task's records count here, one sentence ("" when none is shown)

    def lines(self) -> list[str]:
        """Every record shown, this run's first (what the journal keeps of a recall)."""
        return [*self.this_run, *self.other_tasks]

    def __bool__(self) -> bool:
        return bool(self.this_run or self.other_tasks)


@dataclass(frozen=True)
class MovePrior:
    """What a recipe move (or family) did on similar tasks: how many observations its gain
    counts as (similarity- and transfer-weighted), the mean gain in score spreads, the mean
    log run-time ratio and how many observations that counts as."""

    weight: float
    gain: float
    log_cost: float
    cost_weight: float = 0.0


@dataclass(frozen=True)
class EarlierBest:
    """A recipe configuration that made (or, as a blend's member, helped make) the best node
    of an earlier run on this very task: the settings to make it again, where it came from
    (``run``/``node``, the best node ``best`` and its holdout ``score``) and its run time."""

    config: dict
    run: str
    node: str
    best: str
    score: float
    exec_s: float | None
