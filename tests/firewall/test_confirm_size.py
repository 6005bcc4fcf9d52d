"""The confirmation split's size rule: at least as many rows as the holdout, or none.

Why (``mlguild.firewall.confirm.confirm_size``): the holdout score of the choice errs by its
noise plus the selection bias; the confirmation score by its noise alone, and both noises
shrink as one over the square root of the rows. The simulation below checks that reasoning
on the accuracy of near-tied candidates, the case where a small confirmation split lost."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_task

from mlguild.config import FirewallConfig
from mlguild.firewall.confirm import MIN_TRAIN_SHARE, confirm_size
from mlguild.firewall.workspace import build_workspace
from mlguild.task.folder import load_task


def test_a_smaller_share_is_raised_to_the_holdouts_rows():
    rows, holdout = 1766, 353  # a 20% holdout
    assert confirm_size(rows, holdout, FirewallConfig(confirm_fraction=0.1)) == (holdout, None)
    assert confirm_size(rows, holdout, FirewallConfig())[0] == holdout
    larger = confirm_size(rows, holdout, FirewallConfig(confirm_fraction=0.25))
    assert larger == (round(rows * 0.25), None)  # a larger share is kept


def test_a_split_is_skipped_when_it_would_be_too_small_or_starve_the_training_rows():
    n, reason = confirm_size(400, 80, FirewallConfig())
    assert n == 0 and "too small for a confirmation split" in reason and "firewall.confirm_min_rows=150" in reason
    assert "\n" not in reason
    # A 30% holdout: a confirmation split as large would leave the search 40% of the rows.
    n, reason = confirm_size(10_000, 3_000, FirewallConfig(holdout_fraction=0.3))
    assert n == 0 and f"under {MIN_TRAIN_SHARE:.0%} of the rows to train on" in reason
    assert confirm_size(10_000, 2_000, FirewallConfig(confirm_fraction=0))[1] == (
        "the confirmation split is off (firewall.confirm_fraction=0)"
    )


def test_the_workspace_seals_as_many_confirmation_rows_as_holdout_rows(tmp_path):
    task = load_task(make_task(tmp_path / "task", n=1000))
    split = build_workspace(task, tmp_path / "run", FirewallConfig(confirm_fraction=0.1)).manifest()["split"]
    labelled = split["train_rows"] + split["holdout_rows"] + split["confirm_rows"]
    assert split["holdout_rows"] == split["confirm_rows"] == round(0.2 * labelled) > round(0.1 * labelled)


def _mean_abs_errors(n_holdout: int, n_confirm: int, candidates: int, seed: int = 0) -> tuple[float, float]:
    """Mean |estimate - true accuracy| of the holdout score of the best of ``candidates``
    near-tied classifiers (each right on a row with probability 0.8, independently: models
    that disagree often) and of its confirmation score, over many simulated searches."""
    rng = np.random.default_rng(seed)
    trials, truth = 4000, 0.8
    held = rng.binomial(n_holdout, truth, size=(trials, candidates)) / n_holdout
    chosen = held.max(axis=1)
    confirmed = rng.binomial(n_confirm, truth, size=trials) / n_confirm
    return float(np.abs(chosen - truth).mean()), float(np.abs(confirmed - truth).mean())


@pytest.mark.parametrize("candidates", [3, 10])
def test_the_rule_a_confirmation_split_as_large_as_the_holdout_is_the_closer_estimate(candidates):
    holdout_error, confirm_error = _mean_abs_errors(353, 353, candidates)
    assert confirm_error < holdout_error
    # Half the holdout's rows (the old 10% beside a 20% holdout): with few candidates the
    # holdout's selection bias is smaller than the extra noise, and the holdout is closer.
    if candidates == 3:
        holdout_error, confirm_error = _mean_abs_errors(353, 177, candidates)
        assert confirm_error > holdout_error


def test_rows_ordered_in_time_keep_the_configured_share():
    """There the latest rows are the closer estimate by being nearest the test period; a larger
    split would push the search's rows further from it."""
    assert confirm_size(4558, 912, FirewallConfig(), timed=True) == (456, None)
