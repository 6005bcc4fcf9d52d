"""What a recipe script keeps in memory once its features are built (issue 40: a refit on
ten million rows must fit beside its data): numbers in float32 where float32 holds them, the
raw tables reduced to what is read later, no dense-to-sparse copy for numbers alone."""

import numpy as np
import pandas as pd
import pytest
from conftest import Workspace, binary_workspace, draft_of
from conftest import script_head as _script_head
from scipy import sparse


def _frame(n: int, with_category: bool) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    x = rng.normal(size=n)
    frame = pd.DataFrame(
        {
            "row": [f"r{i:04d}" for i in range(n)],
            "x": x,  # small values: float32 holds them to seven digits
            "share": rng.uniform(0, 1, n),
            # Counts past 2**24, twenty of them: float32 would merge neighbours.
            "count": rng.choice(np.arange(40_000_001, 40_000_021), n),
            "label": np.where(x + rng.normal(scale=0.5, size=n) > 0, "yes", "no"),
        }
    )
    if with_category:
        frame.insert(3, "colour", rng.choice(["red", "green", "blue"], n))
    return frame


def _workspace(root, frame: pd.DataFrame) -> Workspace:
    return binary_workspace(root, frame, "memory")


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    return _workspace(tmp_path_factory.mktemp("numbers"), _frame(400, with_category=False))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    return _workspace(tmp_path_factory.mktemp("mixed"), _frame(400, with_category=True))


def test_numbers_are_float32_where_it_holds_them_and_float64_where_it_would_merge_values(mixed, monkeypatch):
    ns = _script_head(mixed, draft_of(mixed, "lightgbm").code, monkeypatch)
    X, train = ns["X"], pd.read_csv(mixed.data / "train.csv", dtype={"row": str})
    assert X["x"].dtype == np.float32 and X["share"].dtype == np.float32
    assert X["count"].dtype == np.float64
    np.testing.assert_array_equal(X["count"].to_numpy(), train["count"].to_numpy(dtype=float))
    np.testing.assert_allclose(X["x"].to_numpy(), train["x"].to_numpy(), rtol=1e-6)
    assert X["colour"].dtype == "category"


def test_once_the_features_are_built_the_raw_tables_hold_ids_and_targets_alone(mixed, monkeypatch):
    ns = _script_head(mixed, draft_of(mixed, "lightgbm").code, monkeypatch)
    assert list(ns["train"].columns) == ["row", "label"]
    assert list(ns["holdout"].columns) == ["row"] and list(ns["test"].columns) == ["row"]
    assert not {"inputs", "dense", "categories", "texts"} & set(ns)  # freed: X_all holds the features
    assert len(ns["X"]) == len(ns["y"]) == len(ns["train"]) and len(ns["X_test"]) == len(ns["test"])


def test_numbers_alone_stay_a_dense_matrix_and_join_categories_in_a_sparse_one(numbers, mixed, monkeypatch):
    alone = _script_head(numbers, draft_of(numbers, "linear").code, monkeypatch)
    assert isinstance(alone["X_all"], np.ndarray) and alone["X_all"].dtype == np.float64  # the counts
    # A table under a million rows: the numeric steps are fitted on every run row.
    np.testing.assert_array_equal(alone["sample_rows"], np.arange(alone["N_FIT"]))
    np.testing.assert_allclose(alone["X"].mean(axis=0)[:2], 0.0, atol=0.2)  # scaled
    both = _script_head(mixed, draft_of(mixed, "linear").code, monkeypatch)
    assert sparse.issparse(both["X_all"]) and both["X_all"].shape[1] == alone["X_all"].shape[1] + 3
    np.testing.assert_allclose(both["X_all"][:, :3].toarray(), alone["X_all"][:, :3], rtol=1e-6)


def test_rows_without_a_target_are_dropped_and_a_complete_table_is_not_copied(numbers, monkeypatch):
    labelled = _script_head(numbers, draft_of(numbers, "lightgbm").code, monkeypatch)["labelled"]
    whole = pd.DataFrame({"y": [1.0, 2.0, 3.0], "x": [4, 5, 6]}, index=[7, 8, 9])
    kept = labelled(whole, ["y"])
    assert kept is whole and list(kept.index) == [0, 1, 2]
    gap = pd.DataFrame({"y": [1.0, None, 3.0], "x": [4, 5, 6]})
    kept = labelled(gap, ["y"])
    assert list(kept["x"]) == [4, 6] and list(kept.index) == [0, 1]
