"""A competition folder with lookup tables beside train and test (issue 37): inference sets
the tables aside as inputs, each with its key, instead of refusing because the extra CSV files
make the test file ambiguous; a file that joins nothing is said to be unused, in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import as_competition_folder

from mlguild.sources.examples import build_example
from mlguild.sources.infer import infer_task


def _folder(root, test_name: str = "test.csv"):
    """Orders of products by customers (is the order returned?), with a product table (one row
    each), the customers' past orders (several rows each) and a file that joins nothing."""
    rng = np.random.default_rng(0)
    n = 400
    rows = pd.DataFrame(
        {
            "order_id": range(1, n + 1),
            "product_id": [f"P{i:03d}" for i in rng.integers(0, 50, n)],
            "customer_id": rng.integers(500, 580, n),
            "quantity": rng.integers(1, 5, n),
        }
    )
    rows["returned"] = rng.integers(0, 2, n)
    root.mkdir(parents=True)
    rows.iloc[:300].to_csv(root / "train.csv", index=False)
    rows.iloc[300:].drop(columns="returned").to_csv(root / test_name, index=False)
    pd.DataFrame({"order_id": rows["order_id"].iloc[300:], "returned": 0.5}).to_csv(
        root / "sample_submission.csv", index=False
    )
    products = pd.DataFrame({"product_id": [f"P{i:03d}" for i in range(50)], "price": np.arange(50) + 0.5})
    products["colour"] = rng.choice(["red", "blue"], 50)
    products.to_csv(root / "products.csv", index=False)
    past = pd.DataFrame({"customer_id": rng.integers(500, 580, 900), "spent": rng.gamma(2.0, 20.0, 900).round(2)})
    past.to_csv(root / "past_orders.csv", index=False)
    pd.DataFrame({"word": ["a", "b"], "count": [1, 2]}).to_csv(root / "glossary.csv", index=False)
    (root / "description.md").write_text("# Returns\n\nPredict whether an order is returned. Metric: ROC AUC.\n")
    return root


def test_tables_beside_train_and_test_are_found_with_their_keys_and_relations(tmp_path):
    inferred = infer_task(_folder(tmp_path / "shop"))
    tables = {t.file: (t.key, t.join_columns) for t in inferred.spec.tables}
    assert tables == {
        "products.csv": (["product_id"], ["product_id"]),
        "past_orders.csv": (["customer_id"], ["customer_id"]),
    }
    notes = "\n".join(inferred.notes)
    assert "products.csv (50 rows; 2 columns: 1 numeric, 1 text) keyed by product_id, one row per key" in notes
    assert "past_orders.csv (900 rows" in notes and "several rows per key (one-to-many)" in notes
    assert "glossary.csv joins the train rows by no key column: not a lookup table" in notes
    assert inferred.spec.test_file == "test.csv" and inferred.spec.target_columns == ["returned"]


def test_with_the_tables_set_aside_the_one_file_left_is_the_test_file_whatever_its_name(tmp_path):
    folder = _folder(tmp_path / "shop", test_name="orders_to_score.csv")
    (folder / "glossary.csv").unlink()
    inferred = infer_task(folder)
    assert inferred.spec.test_file == "orders_to_score.csv"
    assert {t.file for t in inferred.spec.tables} == {"products.csv", "past_orders.csv"}


def test_the_flights_example_as_a_download_is_inferred_with_its_three_tables(tmp_path):
    example = build_example("flights", tmp_path / "flights")
    inferred = infer_task(as_competition_folder(example, tmp_path / "download", "flat"))
    tables = {t.file: (t.key, t.join_columns) for t in inferred.spec.tables}
    assert tables == {
        "planes.csv": (["tailnum"], ["tailnum"]),
        "weather.csv": (["origin", "time_hour"], ["origin", "time_hour"]),
        "airports.csv": (["faa"], ["dest"]),
    }
    assert (inferred.spec.target_columns, inferred.spec.metric) == (["late"], "roc_auc")
