"""Metrics against hand-computed values or scikit-learn; Score ordering, Worst and NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn import metrics as skm

from mlguild.core.errors import ConfigError
from mlguild.metrics import METRICS, Metric, Score, get_metric, metric_name


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# ------------------------------------------------------------------ registry


def test_registry_names_and_directions():
    expected = {
        "accuracy": "maximize",
        "roc_auc": "maximize",
        "logloss": "minimize",
        "binary_logloss": "minimize",
        "f1": "maximize",
        "f1_macro": "maximize",
        "rmse": "minimize",
        "rmsle": "minimize",
        "mae": "minimize",
        "r2": "maximize",
        "qwk": "maximize",
        "map_at_k": "maximize",
        "gauc": "maximize",
        "ndcg_at_k": "maximize",
    }
    for name, direction in expected.items():
        m = get_metric(name)
        assert isinstance(m, Metric) and m.name == name and m.direction == direction
        assert m.description and m.truth
    assert get_metric("qwk").truth == "integer"
    assert get_metric("gauc").truth == "binary" and get_metric("gauc").grouped


def test_unknown_metric_lists_known_names():
    with pytest.raises(ConfigError) as exc:
        get_metric("acuracy")
    assert "acuracy" in str(exc.value) and "accuracy" in str(exc.value) and "roc_auc" in str(exc.value)


def test_unknown_parameter_is_a_clear_error():
    with pytest.raises(ConfigError, match="does not take"):
        get_metric("rmse")([1.0], [1.0], k=3)


# ------------------------------------------------------------------ classification


def test_accuracy_hand_computed():
    assert get_metric("accuracy")(np.array(["a", "b", "c", "a"]), np.array(["a", "b", "a", "a"])) == 0.75


def test_roc_auc_matches_sklearn_with_ties(rng):
    y = rng.integers(0, 2, 3000)
    s = np.round(rng.random(3000), 2)  # many ties: they must get averaged ranks
    assert get_metric("roc_auc")(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    assert get_metric("roc_auc")(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == 0.75
    assert get_metric("roc_auc")(np.array([0, 1]), np.array([0.5, 0.5])) == 0.5


def test_roc_auc_one_class_is_undefined():
    with pytest.raises(ValueError, match="one class"):
        get_metric("roc_auc")(np.array([1, 1, 1]), np.array([0.1, 0.2, 0.3]))


def test_binary_logloss_matches_sklearn(rng):
    y = rng.integers(0, 2, 500)
    p = rng.uniform(0.01, 0.99, 500)
    assert get_metric("binary_logloss")(y, p) == pytest.approx(skm.log_loss(y, p), rel=1e-12)
    # a confident wrong answer is clipped at 1e-15, not infinite
    assert get_metric("binary_logloss")(np.array([1]), np.array([0.0])) == pytest.approx(-math.log(1e-15))


def test_multiclass_logloss_clips_and_renormalises(rng):
    y = rng.integers(0, 4, 400)
    p = rng.random((400, 4))
    ours = get_metric("logloss")(y, p)
    assert ours == pytest.approx(skm.log_loss(y, p / p.sum(axis=1, keepdims=True)), rel=1e-12)
    # rows that do not sum to one are renormalised like Kaggle does
    assert get_metric("logloss")(np.array([0]), np.array([[2.0, 2.0]])) == pytest.approx(math.log(2))


def test_f1_binary_positive_label():
    t = np.array(["yes", "no", "yes", "yes", "no"])
    p = np.array(["yes", "yes", "no", "yes", "no"])
    # tp=2, fp=1, fn=1 -> 2*2/(4+1+1)
    assert get_metric("f1")(t, p, positive_label="yes") == pytest.approx(4 / 6)
    assert get_metric("f1")(t, p, positive_label="yes") == pytest.approx(skm.f1_score(t, p, pos_label="yes"))
    assert get_metric("f1")(np.array(["0"]), np.array(["0"]), positive_label="1") == 0.0


def test_f1_macro_matches_sklearn(rng):
    t = np.array(list("abc"))[rng.integers(0, 3, 300)]
    p = np.array(list("abcd"))[rng.integers(0, 4, 300)]
    assert get_metric("f1_macro")(t, p) == pytest.approx(skm.f1_score(t, p, average="macro"))


def test_mcc_matches_sklearn_for_two_and_several_labels(rng):
    for labels in ("01", "abc", "abcde"):
        t = np.array(list(labels))[rng.integers(0, len(labels), 400)]
        p = np.where(rng.random(400) < 0.5, t, np.array(list(labels))[rng.integers(0, len(labels), 400)])
        assert get_metric("mcc")(t, p) == pytest.approx(skm.matthews_corrcoef(t, p))
    assert get_metric("mcc")(np.array(["a"] * 5), np.array(list("abaaa"))) == 0.0  # one true label: undefined, 0
    assert get_metric("mcc").direction == "maximize" and metric_name("Matthews correlation") == "mcc"


def test_qwk_matches_sklearn(rng):
    a = rng.integers(0, 5, 1000)
    b = np.clip(a + rng.integers(-2, 3, 1000), 0, 4)
    assert get_metric("qwk")(a, b) == pytest.approx(skm.cohen_kappa_score(a, b, weights="quadratic"))
    assert get_metric("qwk")(a, a) == pytest.approx(1.0)
    # labels with a gap: same convention as sklearn (distinct labels, weighted by index)
    c, d = np.array([1, 2, 5, 5, 2]), np.array([1, 5, 5, 2, 2])
    assert get_metric("qwk")(c, d) == pytest.approx(skm.cohen_kappa_score(c, d, weights="quadratic"))


# ------------------------------------------------------------------ regression


def test_regression_metrics_match_sklearn(rng):
    t, p = rng.random(200) * 10, rng.random(200) * 10
    assert get_metric("rmse")(t, p) == pytest.approx(skm.root_mean_squared_error(t, p))
    assert get_metric("mae")(t, p) == pytest.approx(skm.mean_absolute_error(t, p))
    assert get_metric("r2")(t, p) == pytest.approx(skm.r2_score(t, p))
    assert get_metric("rmsle")(t, p) == pytest.approx(skm.root_mean_squared_log_error(t, p))
    assert get_metric("rmse")(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == pytest.approx(math.sqrt(2))


def test_rmsle_rejects_values_at_or_below_minus_one():
    with pytest.raises(ValueError, match="> -1"):
        get_metric("rmsle")(np.array([1.0, 2.0]), np.array([1.0, -1.0]))


def test_multi_column_is_columnwise_mean(rng):
    t, p = rng.random((50, 3)), rng.random((50, 3))
    per_col = [skm.root_mean_squared_error(t[:, j], p[:, j]) for j in range(3)]
    assert get_metric("rmse")(t, p) == pytest.approx(np.mean(per_col))  # MCRMSE
    assert get_metric("mae")(t, p) == pytest.approx(
        np.mean([skm.mean_absolute_error(t[:, j], p[:, j]) for j in range(3)])
    )
    assert get_metric("r2")(t, p) == pytest.approx(skm.r2_score(t, p))  # sklearn's uniform average


# ------------------------------------------------------------------ ranking


def test_map_at_k_known_example():
    actual = [["a", "b", "c"], ["x"], ["p", "q"], []]
    predicted = [["a", "z", "b"], ["y", "x"], ["q", "q", "p"], ["a"]]
    # row 1: (1/1 + 2/3) / 3; row 2: (1/2) / 1; row 3: (1/1 + 2/3) / 2 (the repeat earns nothing); row 4: 0
    expected = np.mean([(1 + 2 / 3) / 3, 0.5, (1 + 2 / 3) / 2, 0.0])
    assert get_metric("map_at_k")(actual, predicted, k=3) == pytest.approx(expected)
    # min(len(actual), k) denominator
    assert get_metric("map_at_k")([["a", "b", "c"]], [["a"]], k=1) == 1.0


def test_gauc_excludes_single_class_groups(rng):
    y = np.array([0, 1, 1, 0, 1, 1, 1, 0, 0])
    s = np.array([0.2, 0.9, 0.1, 0.3, 0.4, 0.5, 0.6, 0.1, 0.2])
    g = np.array(["u1", "u1", "u1", "u2", "u2", "u3", "u3", "u4", "u4"])
    # u1: positives 0.9 and 0.1 vs negative 0.2 -> 0.5; u2 -> 1.0; u3 all positive, u4 all negative: excluded
    assert get_metric("gauc")(y, s, groups=g) == pytest.approx(0.75)
    y2, s2, g2 = rng.integers(0, 2, 2000), np.round(rng.random(2000), 1), rng.integers(0, 60, 2000)
    ref = [skm.roc_auc_score(y2[g2 == k], s2[g2 == k]) for k in np.unique(g2) if len(set(y2[g2 == k])) == 2]
    assert get_metric("gauc")(y2, s2, groups=g2) == pytest.approx(np.mean(ref))


def test_gauc_all_groups_single_class_is_undefined():
    with pytest.raises(ValueError, match="no group"):
        get_metric("gauc")(np.array([1, 0]), np.array([0.5, 0.5]), groups=np.array(["a", "b"]))


def test_ndcg_matches_sklearn_per_group(rng):
    rel = rng.integers(0, 4, 1500)
    s = np.round(rng.random(1500), 1)  # ties are averaged, as in sklearn
    g = rng.integers(0, 40, 1500)
    ref = [skm.ndcg_score(rel[g == k][None], s[g == k][None], k=5) for k in np.unique(g) if rel[g == k].sum() > 0]
    assert get_metric("ndcg_at_k")(rel, s, groups=g, k=5) == pytest.approx(np.mean(ref))


def test_ndcg_hand_computed_and_excludes_groups_without_relevant_items():
    rel = np.array([3, 2, 0, 1, 0, 0])
    s = np.array([0.1, 0.9, 0.5, 0.2, 0.7, 0.3])
    g = np.array(["a", "a", "a", "a", "b", "b"])
    # group a ranked by score: rel 2, 0, 1, 3 ; k=3
    dcg = 2 / math.log2(2) + 0 / math.log2(3) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert get_metric("ndcg_at_k")(rel, s, groups=g, k=3) == pytest.approx(dcg / idcg)
    exp_dcg = 3 / math.log2(2) + 0 + 1 / math.log2(4)
    exp_idcg = 7 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    assert get_metric("ndcg_at_k")(rel, s, groups=g, k=3, gain="exponential") == pytest.approx(exp_dcg / exp_idcg)


# ------------------------------------------------------------------ Score


def test_score_ordering_by_direction():
    hi, lo = Score(0.9, "maximize"), Score(0.8, "maximize")
    assert hi.better_than(lo) and not lo.better_than(hi) and not hi.better_than(hi)
    assert max([lo, hi]) is hi and sorted([hi, lo]) == [lo, hi]
    small, big = Score(0.1, "minimize"), Score(0.2, "minimize")
    assert small.better_than(big) and not big.better_than(small)
    assert small.key() > big.key()


def test_worst_always_loses():
    for direction, v in (("maximize", -1e300), ("minimize", 1e300)):
        worst, real = Score.worst(direction), Score(v, direction)
        assert worst.is_worst and str(worst) == "worst" and worst.key() == -math.inf
        assert real.better_than(worst) and not worst.better_than(real)
        assert not worst.better_than(Score.worst(direction))


def test_nan_and_inf_never_win():
    for direction in ("maximize", "minimize"):
        nan = Score(float("nan"), direction)
        assert nan.is_worst and nan.value is None
        assert Score(0.0, direction).better_than(nan) and not nan.better_than(Score(0.0, direction))
    assert Score(float("-inf"), "minimize").is_worst and Score(float("inf"), "maximize").is_worst


def test_mixed_directions_refuse_to_compare():
    with pytest.raises(ValueError):
        Score(0.5, "maximize").better_than(Score(0.4, "minimize"))
    with pytest.raises(ValueError):
        Score(0.5, "sideways")  # type: ignore[arg-type]


def test_score_str():
    assert str(Score(0.81234, "maximize")) == "0.8123"
    assert str(Score(np.float64(2.0), "minimize")) == "2.0000"
    assert "e" in str(Score(1.5e-7, "minimize"))


def test_every_registered_metric_is_consistent():
    for name, m in METRICS.items():
        assert m.name == name and m.prediction in (
            "label",
            "probability",
            "class_probabilities",
            "value",
            "ranked_list",
            "label_set",
        )
