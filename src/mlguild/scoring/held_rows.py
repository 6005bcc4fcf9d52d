"""The rows of the holdout inputs file, as the harness scores them: the holdout's, and the
confirmation split's hidden among them (``mlguild.firewall.confirm``).

A node's ``output/holdout.csv`` predicts every row of the holdout inputs file. ``HeldRows``
first validates the whole file strictly (its ids, order and values, as the scorer reads any
file), then hands the scorer the holdout part only: during the search no number ever comes
from a confirmation row. The confirmation part is scored by ``confirm`` alone, which only the
final stage calls (``mlguild.final.confirm``). A run with no confirmation split (too small,
turned off, or created before the split existed) scores the file as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..firewall.confirm import CONFIRM_ANSWERS, confirm_ids, split_predictions
from ..task.spec import HOLDOUT_SAMPLE, TaskSpec
from .scorer import Scorer
from .strict_csv import read_table


class HeldRows:
    """The holdout and confirmation rows of one run; built once per session."""

    def __init__(self, spec: TaskSpec, data_dir: Path, sealed_dir: Path, holdout: Scorer, **options: Any):
        self.spec = spec
        self.ids = confirm_ids(data_dir, sealed_dir, spec.id_column) or set()
        self.validator: Scorer | None = None
        self.confirm: Scorer | None = None
        if self.ids:
            header, columns = read_table(data_dir / HOLDOUT_SAMPLE, max_bytes=None)
            every_row = columns[header.index(spec.id_column)]
            labels = holdout.labels or ()
            self.validator = Scorer(spec, expected_ids=every_row, labels=labels, **options)
            self.confirm = Scorer.from_file(spec, sealed_dir / CONFIRM_ANSWERS, labels=labels, **options)

    @property
    def confirm_rows(self) -> int:
        return len(self.confirm.expected_ids) if self.confirm is not None else 0

    @contextmanager
    def parts(self, path: Path) -> Iterator[tuple[Path, Path | None]]:
        """(holdout part, confirmation part) of a predictions file for the holdout inputs,
        after checking the whole file (SubmissionError); (``path``, None) with no split."""
        if self.validator is not None:
            self.validator.validate(path)
        with split_predictions(path, self.ids or None, self.spec.id_column) as parts:
            yield parts


__all__ = ["HeldRows"]
