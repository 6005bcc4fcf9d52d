"""Lookup tables (issue 37): extra tables beside train and test, keyed by columns of theirs.
Their keys are found (one-to-one, one-to-many, a key named otherwise; a table that joins
nothing is none), a hand-written ``tables:`` is checked, the firewall copies them less any
column carrying a label, and the brief states them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import make_task

from mlguild.config import FirewallConfig
from mlguild.core.errors import TaskError
from mlguild.firewall.verifier import verify_workspace
from mlguild.firewall.workspace import build_workspace
from mlguild.task.brief import TABLES_HEADING, ensure_brief
from mlguild.task.folder import load_task
from mlguild.task.lookup import find_join, measure_tables
from mlguild.task.profile import profile_workspace, summary_text


def _rows(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": range(n),
            "product": [f"p{i}" for i in rng.integers(0, 40, n)],
            "customer": rng.integers(1000, 1060, n),
            "airport": rng.choice([f"A{i:02d}" for i in range(30)], n),
            "hour": rng.integers(0, 24, n),
            "x": rng.normal(size=n).round(3),
        }
    )


def test_a_table_with_one_row_per_key_joins_one_to_one_by_the_shared_column():
    products = pd.DataFrame({"product": [f"p{i}" for i in range(40)], "price": np.arange(40) * 1.5})
    join = find_join("products.csv", products, _rows())
    assert join is not None and (join.key, join.on, join.unique, join.relation) == (
        ["product"],
        ["product"],
        True,
        "one-to-one",
    )
    assert join.train_overlap == 1.0 and "one row per key" in join.words()


def test_a_table_with_several_rows_per_key_joins_one_to_many():
    rng = np.random.default_rng(1)
    orders = pd.DataFrame({"customer": rng.integers(1000, 1060, 500), "amount": rng.gamma(2.0, 10.0, 500).round(2)})
    join = find_join("orders.csv", orders, _rows())
    assert join is not None and (join.key, join.relation) == (["customer"], "one-to-many")
    assert "summarise them per key" in join.words()


def test_a_key_of_two_columns_is_found_when_neither_alone_names_one_row():
    weather = pd.DataFrame(
        [(f"A{a:02d}", h, float(a + h)) for a in range(30) for h in range(24)], columns=["airport", "hour", "temp"]
    )
    join = find_join("weather.csv", weather, _rows())
    assert join is not None and (sorted(join.key), join.unique) == (["airport", "hour"], True)


def test_a_key_named_otherwise_is_matched_by_its_values_when_they_are_text_codes():
    airports = pd.DataFrame({"code": [f"A{i:02d}" for i in range(60)], "altitude": np.arange(60) * 10})
    join = find_join("airports.csv", airports, _rows())
    assert join is not None and (join.key, join.on, join.relation) == (["code"], ["airport"], "one-to-one")
    assert "train and test column airport" in join.words()
    # numbers named otherwise are not keys: small whole numbers overlap by chance
    counts = pd.DataFrame({"n": range(24), "share": np.linspace(0, 1, 24)})
    assert find_join("counts.csv", counts, _rows()) is None


def test_a_table_that_joins_nothing_is_no_lookup_table():
    other = pd.DataFrame({"product": [f"q{i}" for i in range(40)], "v": range(40)})
    assert find_join("other.csv", other, _rows()) is None


def _task_with_tables(root, tables: list[dict], files: dict[str, pd.DataFrame]):
    make_task(root)
    for name, frame in files.items():
        frame.to_csv(root / "public" / name, index=False)
    spec = yaml.safe_load((root / "task.yaml").read_text())
    (root / "task.yaml").write_text(yaml.safe_dump({**spec, "tables": tables}))
    return root


def _shops(root, n_shops: int = 20):
    """make_task's rows with a shop each; a shop table keyed by ``shop``."""
    for name in ("train.csv", "test.csv"):
        frame = pd.read_csv(root / "public" / name)
        frame["shop"] = [f"s{i % n_shops}" for i in range(len(frame))]
        frame.to_csv(root / "public" / name, index=False)
    return pd.DataFrame({"shop": [f"s{i}" for i in range(n_shops)], "size": range(n_shops)})


def test_a_hand_written_tables_entry_loads_and_a_wrong_one_is_refused_in_one_line(tmp_path):
    root = make_task(tmp_path / "t")
    shops = _shops(root)
    shops.rename(columns={"shop": "shop_code"}).to_csv(root / "public" / "shops.csv", index=False)
    spec = yaml.safe_load((root / "task.yaml").read_text())
    (root / "task.yaml").write_text(
        yaml.safe_dump({**spec, "tables": [{"file": "shops.csv", "key": "shop_code", "train_key": "shop"}]})
    )
    table = load_task(root).spec.tables[0]
    assert (table.key, table.join_columns) == (["shop_code"], ["shop"])
    for tables, says in (
        ([{"file": "shops.csv", "key": "shop"}], "has no key column(s) ['shop']"),
        ([{"file": "shops.csv", "key": "shop_code", "train_key": "store"}], "no column(s) ['store']"),
        ([{"file": "missing.csv", "key": "shop"}], "missing.csv is missing"),
        ([{"file": "shops.csv", "key": ["shop_code", "x"], "train_key": "shop"}], "one column per key column"),
        ([{"file": "shops.parquet", "key": "shop"}], "not a CSV file"),
    ):
        (root / "task.yaml").write_text(yaml.safe_dump({**spec, "tables": tables}))
        with pytest.raises(TaskError) as caught:
            load_task(root)
        assert says in str(caught.value), str(caught.value)


def test_the_firewall_copies_a_table_less_a_column_equal_to_the_target(tmp_path):
    root = make_task(tmp_path / "t")
    labels = pd.concat([pd.read_csv(root / "public" / "train.csv"), pd.read_csv(root / "private" / "answers.csv")])
    # a table keyed by the row id: "extra" is an input, "outcome" a renamed copy of the label
    table = pd.DataFrame({"id": labels["id"], "extra": np.arange(len(labels)), "outcome": labels["y"]})
    table.to_csv(root / "public" / "rows.csv", index=False)
    spec = yaml.safe_load((root / "task.yaml").read_text())
    (root / "task.yaml").write_text(yaml.safe_dump({**spec, "tables": [{"file": "rows.csv", "key": "id"}]}))
    ws = build_workspace(load_task(root), tmp_path / "run", FirewallConfig())
    copied = pd.read_csv(ws.data_dir / "rows.csv")
    assert list(copied.columns) == ["id", "extra"] and len(copied) == len(table)
    assert ws.manifest()["tables_dropped"] == {"rows.csv": ["outcome"]}
    assert verify_workspace(tmp_path / "run", "id", ["y"]).ok


def test_the_brief_and_the_data_summary_state_each_table_its_key_and_relation(tmp_path):
    root = make_task(tmp_path / "t")
    shops = _shops(root)
    shops.to_csv(root / "public" / "shops.csv", index=False)
    visits = pd.DataFrame({"shop": [f"s{i % 20}" for i in range(100)], "visitors": range(100)})
    visits.to_csv(root / "public" / "visits.csv", index=False)
    spec = yaml.safe_load((root / "task.yaml").read_text())
    tables = [{"file": "shops.csv", "key": "shop"}, {"file": "visits.csv", "key": "shop"}]
    (root / "task.yaml").write_text(yaml.safe_dump({**spec, "tables": tables}))
    task = load_task(root)
    ws = build_workspace(task, tmp_path / "run", FirewallConfig())
    public = task.spec.public_dict()
    measured = measure_tables(ws.data_dir, public)
    assert [(t["file"], t["relation"], t["train_overlap"], t["test_overlap"]) for t in measured] == [
        ("shops.csv", "one-to-one", 1.0, 1.0),
        ("visits.csv", "one-to-many", 1.0, 1.0),
    ]
    profile = profile_workspace(ws.data_dir, public)
    text, _ = ensure_brief(tmp_path / "run", task.spec, profile, task.description, None)
    section = text.split(TABLES_HEADING, 1)[1]
    assert "shops.csv (20 rows; 1 columns: 1 numeric, 0 text) keyed by shop, one row per key (one-to-one)" in section
    assert "visits.csv" in section and "several rows per key (one-to-many)" in section
    assert "join them to train, holdout and test rows alike" in section
    assert "1. Join the lookup tables by their keys first" in text
    assert "lookup tables (join them by their keys):" in summary_text(profile)
