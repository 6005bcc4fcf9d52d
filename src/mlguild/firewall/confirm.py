"""The confirmation split: a second sealed, labelled split that no node is scored on during
the search.

The holdout score of the node a run chooses is the best of many noisy scores, so it is
biased upward (the winner's curse). The confirmation split is cut like the holdout (the same
stratified or grouped draw, or the latest rows of time-ordered data) and its inputs are
shuffled into the holdout inputs file, so a script predicts its rows without being able to
tell them from the holdout's; its labels are sealed in ``confirm_answers.csv``. The harness
splits a node's holdout predictions by the sealed ids before scoring (``split_predictions``):
the search sees the holdout part only, and the final stage scores the confirmation part of a
few nodes once, after the search (``mlguild.final.confirm``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import mkdtemp

import numpy as np
import pandas as pd

from ..config import FirewallConfig
from ..task.spec import HOLDOUT_INPUTS
from ..util.exact_csv import read_csv_exact, write_csv_exact
from .draws import split_holdout
from .time_split import time_holdout

CONFIRM_ANSWERS = "confirm_answers.csv"


# The search keeps at least this share of the labelled rows to train on: a confirmation split
# raised to the holdout's size (below) may not take more.
MIN_TRAIN_SHARE = 0.5


def confirm_size(n_rows: int, n_holdout: int, cfg: FirewallConfig, *, timed: bool = False) -> tuple[int, str | None]:
    """How many labelled rows the confirmation split seals, and why none when it is skipped
    (off, or a task too small for it).

    The size rule. The holdout score of the choice errs by its noise plus the selection bias
    (the best of many noisy scores); the confirmation score errs by its noise alone. For
    every metric mlguild scores, a score's noise (its standard error) shrinks as one over the
    square root of the rows scored, whatever the metric's scale. So a confirmation split with
    at least as many rows as the holdout is the closer estimate of the score on new rows
    whatever the bias: its error variance is at most the holdout's, to which the bias adds. A
    smaller split wins only when the bias is large against the noise (models that disagree on
    many rows, many near-tied candidates), which nothing knows before the search: at half the
    holdout's rows its standard error is 1.41 times the holdout's, and a bias smaller than the
    holdout's own noise leaves the holdout closer. So a ``confirm_fraction`` giving fewer rows
    than the holdout is raised to the holdout's row count, as long as the search keeps
    ``MIN_TRAIN_SHARE`` of the rows to train on; a task where that cannot be, or where the
    split would hold fewer than ``confirm_min_rows`` rows (a bootstrap interval too wide to
    say anything), skips it and says why in one line.

    Rows ordered in time (``timed``: the holdout and the confirmation split are the latest
    rows) keep ``confirm_fraction`` as it is: there the confirmation split, the latest rows,
    is the closer estimate because it is the nearest in time to the test rows (drift, not
    noise), and a larger one would push the search's training rows and holdout further from
    the test period; with a 20% holdout and 20% confirmation split, the recipes' out-of-fold
    scores on the earlier rows then beat the holdout beyond its noise (false ``leaky_cv``
    alarms on the ridership example).
    """
    if cfg.confirm_fraction <= 0:
        return 0, "the confirmation split is off (firewall.confirm_fraction=0)"
    wanted = min(int(round(n_rows * cfg.confirm_fraction)), cfg.max_holdout_rows)
    wanted = wanted if timed else max(wanted, n_holdout)
    too_small = f"the task is too small for a confirmation split: {n_rows} labelled rows give a holdout of {n_holdout}"
    if wanted < cfg.confirm_min_rows:
        return 0, (
            f"{too_small} rows, and a confirmation split needs at least as many to be the closer estimate "
            f"of the test score; {wanted} rows is under firewall.confirm_min_rows={cfg.confirm_min_rows}"
        )
    if n_rows - n_holdout - wanted < MIN_TRAIN_SHARE * n_rows:
        return 0, (
            f"{too_small} rows, and a confirmation split of {wanted} rows (at least as many, to be the closer "
            f"estimate of the test score) would leave the search under {MIN_TRAIN_SHARE:.0%} of the rows to train on"
        )
    return wanted, None


def confirm_mask(
    train: pd.DataFrame, held: np.ndarray, n_confirm: int, target: str, id_column: str,
    *, grouped: bool, stratify: bool, times: pd.Series | None, seed: int,
) -> np.ndarray:  # fmt: skip
    """Boolean mask of the confirmation rows, drawn from the ``held`` rows (the holdout's
    draw, made larger by ``n_confirm``) the way the holdout was: the latest rows of
    time-ordered data (whole groups, each by its latest time), else whole groups where ids
    repeat, else a seeded draw stratified by label like the holdout's."""
    mask = np.zeros(len(train), dtype=bool)
    rows = np.flatnonzero(held)
    if n_confirm <= 0 or len(rows) < 2:
        return mask
    ids = train[id_column].iloc[rows].reset_index(drop=True)
    if times is not None:
        sub = time_holdout(times.iloc[rows].reset_index(drop=True), n_confirm, ids if grouped else None)
    elif grouped:
        groups = pd.Series(ids.unique())
        chosen = split_holdout(groups, n_confirm / len(rows), n_confirm, seed + 1, stratify=False)
        sub = ids.isin(set(groups[chosen])).to_numpy()
    else:
        labels = train[target].iloc[rows].reset_index(drop=True)
        sub = split_holdout(labels, n_confirm / len(rows), n_confirm, seed + 1, stratify)
    mask[rows[sub]] = True
    return mask


def shuffled_order(ids: pd.Series, seed: int) -> np.ndarray:
    """A seeded permutation of the held rows that keeps the rows of a repeated id (a group,
    a query) together and in their order, so that holdout and confirmation rows mix."""
    codes, uniques = pd.factorize(ids)
    rank = np.random.default_rng(seed).permutation(len(uniques))
    return np.lexsort((np.arange(len(codes)), rank[codes]))


def confirm_ids(data_dir: Path, sealed_dir: Path, id_column: str) -> set[str] | None:
    """The ids of the confirmation rows, read from the sealed answers (None: no split)."""
    path = sealed_dir / CONFIRM_ANSWERS
    if not path.exists():
        return None
    ids = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=[id_column])[id_column]
    return set(ids.tolist())


def held_answers(data_dir: Path, holdout_answers: Path, id_column: str) -> pd.DataFrame:
    """The sealed answers of every row of the holdout inputs file, in its order: the holdout
    answers, with the confirmation answers put back in the places their rows hold."""

    answers = read_csv_exact(holdout_answers)
    confirm_path = holdout_answers.parent / CONFIRM_ANSWERS
    if not confirm_path.exists():
        return answers
    confirm = read_csv_exact(confirm_path)
    inputs = read_csv_exact(data_dir / HOLDOUT_INPUTS)
    is_confirm = inputs[id_column].isin(set(confirm[id_column])).to_numpy()
    merged = pd.DataFrame(index=range(len(inputs)), columns=answers.columns, dtype=object)
    merged.loc[~is_confirm, :] = answers.to_numpy()
    merged.loc[is_confirm, :] = confirm[answers.columns].to_numpy()
    return merged.astype(str)


@contextmanager
def split_predictions(path: Path, confirm: set[str] | None, id_column: str) -> Iterator[tuple[Path, Path | None]]:
    """(holdout part, confirmation part) of a predictions file for the holdout inputs, split
    by the sealed confirmation ids, each keeping the file's row order; with no confirmation
    split, (``path``, None) and nothing is written. The parts live in a private folder (mode
    0700, outside the run) removed on exit: a script never sees which rows were which."""
    if not confirm:
        yield path, None
        return
    folder = Path(mkdtemp(prefix="mlguild-split-"))
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, index_col=False)
        if id_column not in frame.columns:  # the scorer says what is wrong with such a file
            yield path, None
            return
        in_confirm = frame[id_column].isin(confirm).to_numpy()
        holdout, confirmation = folder / "holdout.csv", folder / "confirm.csv"
        write_csv_exact(frame[~in_confirm], holdout)
        write_csv_exact(frame[in_confirm], confirmation)
        yield holdout, confirmation
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = [
    "CONFIRM_ANSWERS",
    "MIN_TRAIN_SHARE",
    "confirm_ids",
    "confirm_mask",
    "confirm_size",
    "held_answers",
    "shuffled_order",
    "split_predictions",
]
