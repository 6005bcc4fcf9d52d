"""Pearson's r, Spearman's rho and the mean column-wise Spearman (us-patent-phrase-to-phrase-
matching's and google-quest-challenge's graders): against a computation by hand, against scipy
as those graders call it, and read from the descriptions that name them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from mlguild.metrics import get_metric, metric_name, per_column
from mlguild.metrics.correlation import average_ranks
from mlguild.sources.described_metric import metric_from_description, several_targets_metric


def test_pearson_by_hand():
    # truth 1,2,3,4 and prediction 2,4,5,9: means 2.5 and 5; deviations -1.5,-.5,.5,1.5 and
    # -3,-1,0,4; products sum 4.5+.5+0+6 = 11; squares 5 and 26: r = 11 / sqrt(5 * 26)
    assert get_metric("pearson")([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / np.sqrt(130))
    assert get_metric("pearson")([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert get_metric("pearson").direction == "maximize"


def test_spearman_by_hand_with_ties():
    # prediction 10, 20, 20, 40 ranks 1, 2.5, 2.5, 4 (ties share the mean of their ranks)
    assert list(average_ranks([10, 20, 20, 40])) == [1.0, 2.5, 2.5, 4.0]
    # truth ranks 1,2,3,4 (deviations -1.5,-.5,.5,1.5); prediction's deviations -1.5,0,0,1.5:
    # products 2.25 + 0 + 0 + 2.25 = 4.5; squares 5 and 4.5: rho = 4.5 / sqrt(22.5)
    assert get_metric("spearman")([1, 2, 3, 4], [10, 20, 20, 40]) == pytest.approx(4.5 / np.sqrt(22.5))
    assert get_metric("spearman")([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)  # monotone is perfect


def test_they_agree_with_scipy_as_the_graders_call_it():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 5, size=(120, 3)) / 4  # few distinct values: ties everywhere, as in google-quest
    guess = truth + rng.normal(0, 0.3, size=truth.shape)
    assert get_metric("pearson")(truth[:, 0], guess[:, 0]) == pytest.approx(pearsonr(truth[:, 0], guess[:, 0])[0])
    assert get_metric("spearman")(truth[:, 1], guess[:, 1]) == pytest.approx(spearmanr(truth[:, 1], guess[:, 1])[0])
    rounded = np.round(guess, 1)  # ties in the prediction too
    columns = np.mean([spearmanr(rounded[:, j], truth[:, j]).correlation for j in range(3)])
    assert get_metric("mean_columnwise_spearman")(truth, rounded) == pytest.approx(columns)


def test_a_constant_prediction_scores_zero_and_a_constant_truth_is_undefined():
    assert get_metric("pearson")([1, 2, 3], [5, 5, 5]) == 0.0
    assert get_metric("spearman")([1, 2, 3], [5, 5, 5]) == 0.0
    with pytest.raises(ValueError, match="every truth value is the same"):
        get_metric("pearson")([2, 2, 2], [1, 2, 3])
    # a column whose truth is constant (a rare label on a small holdout) is left out of the mean
    truth = np.array([[1, 0], [2, 0], [3, 0]])
    assert get_metric("mean_columnwise_spearman")(truth, np.array([[1, 5], [2, 4], [3, 3]])) == pytest.approx(1.0)


def test_names_and_descriptions():
    assert metric_name("Pearson correlation") == "pearson" and metric_name("spearmanr") == "spearman"
    assert per_column("mean_columnwise_spearman") == "spearman"
    assert several_targets_metric("spearman") == "mean_columnwise_spearman"
    quest = "## Evaluation\n\nSubmissions are evaluated on the mean column-wise Spearman's correlation coefficient."
    assert metric_from_description(quest)[0] == "mean_columnwise_spearman"
    patent = "## Evaluation\n\nSubmissions are evaluated on the Pearson correlation coefficient between the scores."
    assert metric_from_description(patent)[0] == "pearson"
