"""The plain-LightGBM peer of ``benchmarks/vs_automl.py`` on the key conventions of issue 37: a
row id beside a group column under a combined metric (``crackers``' shape) and a ranked file
with no score column (``catsup``'s). Its submission must be one mlguild's own scorer accepts,
ranked within the task's groups (not within the row id, which would leave groups of one row)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from mlguild.scoring.scorer import Scorer
from mlguild.task.spec import TaskSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "peers"))
import run_lightgbm


def _choices(groups: int, seed: int) -> pd.DataFrame:
    """Purchases of one of four brands each: the cheapest brand is the one bought."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "purchase": np.repeat(np.arange(groups) + 1, 4),
            "brand": np.tile(["a", "b", "c", "d"], groups),
            "price": rng.normal(100, 20, 4 * groups).round(1),
        }
    )
    frame["chosen"] = (frame["price"] == frame.groupby("purchase")["price"].transform("min")).astype(int)
    return frame


def _run_peer(tmp_path: Path, spec: TaskSpec, train: pd.DataFrame, test: pd.DataFrame, monkeypatch) -> pd.DataFrame:
    (tmp_path / "spec.json").write_text(json.dumps(spec.public_dict()))
    train.to_csv(tmp_path / "train.csv", index=False)
    test.drop(columns=spec.target_columns).to_csv(tmp_path / "test.csv", index=False)
    args = ["--spec", "spec.json", "--train", "train.csv", "--test", "test.csv", "--out", "sub.csv", "--info", "i.json"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["run_lightgbm.py", *args])
    assert run_lightgbm.main() == 0
    answers = test[[c for c in dict.fromkeys([spec.id_column, *spec.key_columns, *spec.target_columns])]]
    scorer = Scorer(spec, answers=answers.astype(str))
    scorer.validate(tmp_path / "sub.csv")
    assert scorer.score(tmp_path / "sub.csv").value > 0.9  # the price decides: ranked within each purchase
    return pd.read_csv(tmp_path / "sub.csv", dtype=str)


def test_a_row_id_beside_a_group_column_under_a_combined_metric(tmp_path, monkeypatch):
    frame = _choices(80, seed=1)
    frame.insert(0, "id", [f"r{i}" for i in range(len(frame))])
    spec = TaskSpec(
        name="crackers", task_type="ranking", metric="mean(gauc, ndcg@5)", id_column="id", group_column="purchase",
        key_columns=["purchase", "brand"], target_columns=["chosen"], submission_columns=["id", "purchase", "brand", "score"],
        positive_label="1",
    )  # fmt: skip
    sub = _run_peer(tmp_path, spec, frame.iloc[:240], frame.iloc[240:], monkeypatch)
    assert list(sub.columns) == ["id", "purchase", "brand", "score"]


def test_a_ranked_file_lists_each_groups_rows_best_first(tmp_path, monkeypatch):
    frame = _choices(80, seed=2)
    spec = TaskSpec(
        name="catsup", task_type="ranking", metric="ndcg_at_k", metric_params={"k": 2}, id_column="purchase",
        ids_unique=False, key_columns=["brand"], target_columns=["chosen"], submission_columns=["purchase", "brand"],
        ranked_file=True,
    )  # fmt: skip
    test = frame.iloc[240:]
    sub = _run_peer(tmp_path, spec, frame.iloc[:240], test, monkeypatch)
    assert list(sub.columns) == ["purchase", "brand"]
    assert sorted(map(tuple, sub.to_numpy())) == sorted(map(tuple, test[["purchase", "brand"]].astype(str).to_numpy()))
    assert list(dict.fromkeys(sub["purchase"])) == list(dict.fromkeys(test["purchase"].astype(str)))  # groups whole
    first = sub.groupby("purchase", sort=False)["brand"].first()
    cheapest = test.loc[test["chosen"] == 1].set_index(test.loc[test["chosen"] == 1, "purchase"].astype(str))["brand"]
    assert (first == cheapest.reindex(first.index)).mean() > 0.8
