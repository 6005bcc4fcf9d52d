"""The final refit of a ranked-list task ordered in time: a sound refit (the recipe script,
trained on the latest rows too) is accepted by the metric rule that suits lists, though its
lists share far fewer items with the base node's than agreement would need; a broken refit is
still refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.protocols import Proposal
from mlguild.final.stage import FinalStage
from mlguild.run.loop import Agent
from mlguild.run.refit import DEFAULT_SCALE
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task


def _lists_task(root, n: int = 900):
    """A user a row, by day: the items they saw, and the next items they want (the items after
    their last three, with tastes that shift over time: a later user wants items further on)."""
    rng = np.random.default_rng(7)
    items = [f"m{i}" for i in range(40)]
    rows = []
    for i in range(n):
        seen = rng.choice(items, 6, replace=False)
        shift = 1 + (i * 3) // n
        wanted = list(dict.fromkeys(f"m{(int(s[1:]) + shift) % 40}" for s in seen[-3:]))
        day = (pd.Timestamp("2021-01-01") + pd.Timedelta(days=i // 5)).strftime("%Y-%m-%d")
        rows.append({"user": f"u{i:04d}", "day": day, "seen": " ".join(seen), "next": " ".join(wanted)})
    frame = pd.DataFrame(rows)
    n_test = n // 5
    train, test = frame.iloc[:-n_test], frame.iloc[-n_test:]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["next"]).to_csv(root / "public" / "test.csv", index=False)
    pd.DataFrame({"user": test["user"], "next": "m0"}).to_csv(root / "public" / "sample_submission.csv", index=False)
    test[["user", "next"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {"name": "next_items", "task_type": "ranking", "metric": "map_at_k", "metric_params": {"k": 3},
            "id_column": "user", "target_columns": ["next"], "submission_columns": ["user", "next"],
            "time_column": "day"}  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text("# next items\nThe next items each user wants.\n")
    return root


def _run(tmp_path):
    cfg = load_config(
        None, ["search.num_drafts=1", "search.draft_every=0", "budget.iterations=1", "sandbox.script_timeout_s=120"]
    )
    return create_run(load_task(_lists_task(tmp_path / "task")), cfg, tmp_path / "runs")


def test_a_time_ordered_list_refit_is_accepted_and_trains_on_the_latest_rows(tmp_path):
    run = _run(tmp_path)
    agent = Agent(open_session(run, RecipeBrain(), get_sandbox("auto")))
    agent.run_loop()
    best = agent.session.state.graph[agent.session.state.best_id]
    assert best.score is not None and "time_folds(" in (run.node_dir(best.id) / "solution.py").read_text()
    choice = FinalStage(agent.session).run_refit(240)
    assert choice["refit"], choice["reason"]
    assert "judged by its metric" in choice["reason"]
    refit = agent.session.state.graph[choice["node"]]
    # The refit trained on the holdout rows too: the latest labelled days, which the search never fit on.
    split = run.workspace.manifest()["split"]
    out = (run.node_dir(refit.id) / "stdout.txt").read_text()
    assert f"train ({split['train_rows'] + split['holdout_rows']}," in out, out[:500]
    assert (run.path / "final" / "submission.csv").read_bytes() == (
        run.node_dir(refit.id) / "output" / "submission.csv"
    ).read_bytes()


# The most listed items; LOST makes it list items no user wants once it sees more rows than
# the search gave it (a refit gone wrong).
POPULAR = """
import os
from collections import Counter
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype=str, keep_default_na=False)
top = [item for item, _ in Counter(t for row in train["next"] for t in row.split()).most_common(3)]
if len(train) > {search_rows}:
    top = ["nothing1", "nothing2", "nothing3"]
os.makedirs("output", exist_ok=True)
Path("output/rows.txt").write_text(f"{{len(train)}} {{train['day'].min()}} {{train['day'].max()}}")
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype=str, keep_default_na=False)
    pd.DataFrame({{"user": frame["user"], "next": " ".join(top)}}).to_csv("output/" + dst, index=False)
"""


def test_a_broken_list_refit_is_still_refused(tmp_path):
    run = _run(tmp_path)
    code = POPULAR.format(search_rows=run.workspace.manifest()["split"]["train_rows"])
    agent = Agent(open_session(run, ScriptedBrain([Proposal("popular", code, {})]), get_sandbox("auto")))
    agent.run_loop()
    assert agent.session.state.best_id == "n0001"
    choice = FinalStage(agent.session).run_refit(120)
    assert choice["node"] == "n0001" and not choice["refit"]
    assert "scores worse than n0001 on the holdout rows beyond noise" in choice["reason"]


def test_with_no_time_to_refit_on_every_row_the_latest_rows_that_fit_are_refitted(tmp_path):
    run = _run(tmp_path)
    split = run.workspace.manifest()["split"]
    agent = Agent(
        open_session(
            run, ScriptedBrain([Proposal("popular", POPULAR.format(search_rows=10**9), {})]), get_sandbox("auto")
        )
    )
    agent.run_loop()
    base = agent.session.state.graph["n0001"]
    base.timing["exec_s"] = 120.0  # as if the search's run took 120 s: a full refit needs more than is left
    grow = (split["train_rows"] + split["holdout_rows"] + (split.get("confirm_rows") or 0)) / split["train_rows"]
    assert 120.0 * DEFAULT_SCALE * grow > 140
    choice = FinalStage(agent.session).run_refit(140)
    assert choice["refit"], choice["reason"]
    # 120 s on the search's rows at the default scale: 140 s fit about 1.17 times as many.
    window = int(140 / (120 * DEFAULT_SCALE / split["train_rows"]))
    assert window > split["train_rows"]
    assert f"refitted on the latest {window} labelled rows, at least as many as" in choice["reason"]
    rows, first, last = (run.node_dir(choice["node"]) / "output" / "rows.txt").read_text().split()
    searched = (run.node_dir("n0001") / "output" / "rows.txt").read_text().split()
    # As many rows as fit (whole days at the cut), the latest: up to the holdout's last day.
    assert abs(int(rows) - window) < 5 and first > searched[1] and last > searched[2]
