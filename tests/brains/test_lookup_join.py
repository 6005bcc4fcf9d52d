"""The recipe scripts join a task's lookup tables (issue 37): a one-to-one table's columns as
they are, a one-to-many table's rows summarised per key, in every part alike; every tabular
family's script does, and the joined columns are features a model uses. Every prompt of the
LLM brain states the tables and their keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import FULL, Workspace, draft_of, make_task

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.brains.recipes.catalog import DRAFT_ORDER
from mlguild.config import load_config
from mlguild.llm import ScriptedLLM
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task
from mlguild.task.profile import profile_workspace

TABLES = [{"file": "products.csv", "key": ["product"]}, {"file": "history.csv", "key": ["customer"]}]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """A target that only the tables explain: the product's quality (one row per product) plus
    the customer's mean past spend (several rows per customer); the rows carry only the keys."""
    rng = np.random.default_rng(0)
    quality = rng.normal(size=30)
    spend = rng.normal(size=40)
    n = 500
    rows = pd.DataFrame(
        {
            "id": [f"o{i:04d}" for i in range(n)],
            "product": [f"p{i}" for i in rng.integers(0, 30, n)],
            "customer": rng.integers(0, 40, n),
            "noise": rng.normal(size=n),
        }
    )
    rows["y"] = (
        quality[rows["product"].str[1:].astype(int)] + 2 * spend[rows["customer"]] + rng.normal(scale=0.1, size=n)
    ).round(4)
    ws = Workspace(
        tmp_path_factory.mktemp("shop"), rows, name="shop", task_type="regression", metric="rmse",
        id_column="id", target_columns=["y"], submission_columns=["id", "y"],
    )  # fmt: skip
    pd.DataFrame({"product": [f"p{i}" for i in range(30)], "quality": quality.round(4)}).to_csv(
        ws.data / "products.csv", index=False
    )
    customers = np.repeat(np.arange(40), 5)
    past = pd.DataFrame({"customer": customers, "spent": (spend[customers] + rng.normal(scale=0.05, size=200))})
    past["shop"] = rng.choice(["north", "south", "east"], 200)
    past.to_csv(ws.data / "history.csv", index=False)
    ws.task["tables"] = TABLES
    ws.profile = profile_workspace(ws.data, ws.task).to_dict()
    return ws


@pytest.mark.parametrize("recipe", DRAFT_ORDER["tabular"])
def test_every_tabular_family_joins_the_tables_before_its_features(shop, recipe):
    code = draft_of(shop, recipe).code
    assert code.index("for lookup in LOOKUP_TABLES:") < code.index("FEATURES = [")
    assert "{'file': 'products.csv', 'key': ['product'], 'on': ['product']}" in code
    assert "KIND_OF.update(JOINED_KINDS)" in code


@pytest.mark.parametrize("recipe", ["lightgbm", "linear"])  # native categories; one-hot and scaling
def test_the_joined_columns_are_features_the_model_uses(shop, recipe):
    done = shop.run(draft_of(shop, recipe).code, recipe)
    assert "joined products.csv on ['product'] (one-to-one): 1 columns" in done.stdout
    # the count, the mean, min and max of the past spend, and the number of distinct shops
    assert "joined history.csv on ['customer'] (one-to-many, summarised per key): 5 columns" in done.stdout
    assert "text features from 9 columns" in done.stdout  # the rows' 3 inputs and the 6 joined
    if recipe != "lightgbm":
        return
    importance = pd.read_csv(shop.root / "nodes" / recipe / "output" / "importance.csv")
    top = list(importance.sort_values("importance", ascending=False)["feature"].head(3))
    assert "products_quality" in top and "history_spent_mean" in importance["feature"].tolist(), top


def test_every_llm_prompt_states_the_tables_and_their_keys(tmp_path):
    root = make_task(tmp_path / "t")
    for name in ("train.csv", "test.csv"):
        frame = pd.read_csv(root / "public" / name)
        frame["shop"] = [f"s{i % 20}" for i in range(len(frame))]
        frame.to_csv(root / "public" / name, index=False)
    pd.DataFrame({"shop_code": [f"s{i}" for i in range(20)], "size": range(20)}).to_csv(
        root / "public" / "shops.csv", index=False
    )
    spec = yaml.safe_load((root / "task.yaml").read_text())
    tables = [{"file": "shops.csv", "key": "shop_code", "train_key": "shop"}]
    (root / "task.yaml").write_text(yaml.safe_dump({**spec, "tables": tables}))
    values = {
        "budget.iterations": 2, "search.num_drafts": 2, "search.draft_every": 0, "sandbox.script_timeout_s": 30,
        "brain.eda": False, "search.policy": "greedy", "final.reference_models": False,
    }  # fmt: skip
    run = create_run(load_task(root), load_config(None, [f"{k}={v}" for k, v in values.items()]), tmp_path / "runs")
    llm = ScriptedLLM(default=FULL)
    Agent(open_session(run, LLMBrain(llm, LLMBrainOptions(diff_mode=False)))).run_loop()
    said = "shops.csv (20 rows; 1 columns: 1 numeric, 0 text) keyed by shop_code (train and test column shop)"
    assert llm.calls and all(said in "\n".join(m.content for m in call["messages"]) for call in llm.calls)
    run.close()


def _with_tables(ws: Workspace, tables_from: Workspace) -> Workspace:
    for table in TABLES:
        (ws.data / table["file"]).write_bytes((tables_from.data / table["file"]).read_bytes())
    ws.task["tables"] = TABLES
    ws.profile = profile_workspace(ws.data, ws.task).to_dict()
    return ws


def test_the_several_target_and_ranking_scripts_join_the_tables_too(shop, tmp_path):
    rows = pd.read_csv(shop.data / "train.csv").assign(z=lambda f: f["y"] * 2)
    several = Workspace(
        tmp_path / "several", rows, n_holdout=60, n_test=60, name="several", task_type="regression",
        metric="mcrmse", id_column="id", target_columns=["y", "z"], submission_columns=["id", "y", "z"],
    )  # fmt: skip
    done = _with_tables(several, shop).run(draft_of(several, "linear").code, "several")
    assert "joined history.csv on ['customer'] (one-to-many, summarised per key)" in done.stdout
    rows = rows.assign(query=rows.index // 5, chosen=(rows["y"] > rows["y"].median()).astype(int))
    ranking = Workspace(
        tmp_path / "ranking", rows.drop(columns=["y", "z"]), n_holdout=0, n_test=0, name="ranking",
        task_type="ranking", metric="ndcg_at_k", metric_params={"k": 2}, id_column="query", ids_unique=False,
        key_columns=["id"], target_columns=["chosen"], submission_columns=["query", "id", "chosen"],
    )  # fmt: skip
    code = draft_of(_with_tables(ranking, shop), "lambdarank").code
    assert code.index("for lookup in LOOKUP_TABLES:") < code.index("FEATURES = [")
    assert "KIND_OF.update(JOINED_KINDS)" in code
