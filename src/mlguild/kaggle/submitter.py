"""Submitting a run's predictions to Kaggle (``kaggle.submit``) and recording the public scores.

The public leaderboard score is recorded on the node it belongs to, beside its holdout score,
and nothing in the search reads it: steering by the public leaderboard is how a model overfits
it. Each submission is in the journal (``kaggle_submitted``) before anything else happens, so
the daily limit holds across resumes: a run makes at most ``kaggle.daily_limit`` submissions (or
the competition's own limit, when lower) in any 24 hours. A failed call is a warning, never the
end of the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import KaggleError, MlguildError
from ..core.vocabulary import Event
from ..rundir import events
from ..rundir.folder import RunDir
from ..util.fs import sha256_file
from .api import KaggleClient, competition_slug

_DAY_S = 24 * 3600
_POLL_EVERY_S = 5.0


def kaggle_slug(run: RunDir) -> str | None:
    """The competition of a task made from Kaggle (its source is ``kaggle:SLUG``)."""
    return competition_slug(run.spec.source or "")


class Submitter:
    def __init__(
        self,
        run: RunDir,
        client: KaggleClient,
        *,
        warn: Callable[[str], None] = print,
        daily_limit: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        slug = kaggle_slug(run)
        if slug is None:
            raise KaggleError(
                "--submit needs a task made from a Kaggle competition",
                "make one with `mlguild init https://www.kaggle.com/competitions/NAME`",
            )
        self.run, self.client, self.slug, self.warn, self.sleep = run, client, slug, warn, sleep
        self.mode = run.config.kaggle.submit
        limits = [run.config.kaggle.daily_limit, *([daily_limit] if daily_limit else [])]
        self.daily_limit = min(limits)

    # --- what was submitted, from the journal ---
    def _records(self, kind: Event) -> list[dict[str, Any]]:
        return [r for r in self.run.journal.records if r["type"] == kind]

    def submitted_today(self) -> int:
        now = time.time()
        return sum(1 for r in self._records(Event.KAGGLE_SUBMITTED) if now - float(r["ts"]) < _DAY_S)

    def submit(self, node_id: str, csv: Path, why: str) -> bool:
        """Submit ``csv`` (node ``node_id``'s predictions) unless the daily limit is reached."""
        digest = sha256_file(csv)
        if any(r["sha256"] == digest for r in self._records(Event.KAGGLE_SUBMITTED)):
            return False  # the same predictions are on the leaderboard already
        if self.submitted_today() >= self.daily_limit:
            self.warn(
                f"not submitted {node_id}: {self.daily_limit} submissions in the last 24 hours (kaggle.daily_limit)"
            )
            events.kaggle_submit_skipped(self.run.journal, node_id, "daily limit")
            return False
        message = f"mlguild {self.run.path.name} {node_id}: {why}"[:500]
        try:
            ref = self.client.submit(self.slug, csv, message)
        except MlguildError as exc:
            self.warn(f"submitting {node_id} failed: {exc.message} ({exc.fix})")
            events.kaggle_submit_failed(self.run.journal, node_id, exc.message)
            return False
        events.kaggle_submitted(self.run.journal, node_id, ref, digest, message)
        return True

    def on_best(self, node_id: str) -> None:
        """``each``: submit a node when it becomes the best."""
        if self.mode == "each":
            self.submit(node_id, self.run.node_dir(node_id) / "output" / "submission.csv", "new best node")

    def at_end(self, final_node: str | None) -> None:
        """``best``: submit the final submission, once; then wait for the public scores."""
        final = self.run.path / "final" / "submission.csv"
        if self.mode == "best" and final_node is not None and final.exists():
            self.submit(final_node, final, "final submission")
        self.poll(self.run.config.kaggle.poll_s)

    def public_scores(self) -> dict[str, float | None]:
        """Per node, its public leaderboard score (None when Kaggle could not score it)."""
        return {r["node"]: r["public_score"] for r in self._records(Event.KAGGLE_SCORED)}

    def poll(self, wait_s: float) -> dict[str, float | None]:
        """Record the public scores Kaggle has computed, waiting up to ``wait_s`` for the rest."""
        deadline = time.monotonic() + wait_s
        while True:
            scored = self.public_scores()
            waiting = {r["ref"]: r["node"] for r in self._records(Event.KAGGLE_SUBMITTED) if r["node"] not in scored}
            if not waiting:
                break
            try:
                listed = self.client.submissions(self.slug)
            except MlguildError as exc:
                self.warn(f"cannot read the public scores: {exc.message}")
                break
            for sub in listed:
                owner = waiting.get(sub.ref)
                if owner is not None and sub.status == "complete" and sub.public_score is not None:
                    events.kaggle_scored(self.run.journal, owner, sub.ref, sub.public_score)
                elif owner is not None and sub.status == "error":
                    events.kaggle_scored(self.run.journal, owner, sub.ref, None, sub.error)
            if time.monotonic() >= deadline:
                break
            self.sleep(_POLL_EVERY_S)
        return self.public_scores()
