"""Novelty, measured (mlguild.pools.novelty), and the guild of runs (mlguild.pools.guild).

Each finished node's script is compared with the code of every community item; the largest
overlap and its item are in the node's report, a near-copy is labelled so in its report and
the pools, and status and the run's report show the run's novelty. A second run of a task
starts with the reports and gains of the first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FULL, GOOD, llm_agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.llm import ScriptedLLM
from mlguild.pools.novelty import CommunityCode, item_code, shingles, tokens
from mlguild.task.knowledge import Item, add_items

FIXTURES = Path(__file__).parents[1] / "fixtures" / "knowledge"

NOTEBOOK_CODE = """
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
train = pd.read_csv("../input/train.csv")
features = [c for c in train.columns if c not in ("id", "target")]
model = RandomForestClassifier(n_estimators=500, max_depth=8, random_state=0)
model.fit(train[features], train["target"])
test = pd.read_csv("../input/test.csv")
pd.DataFrame({"id": test["id"], "target": model.predict_proba(test[features])[:, 1]}).to_csv("sub.csv", index=False)
"""


def _item(id_: str, kind: str, text: str) -> Item:
    return Item(id_, kind, f"item {id_}", "someone", "expert", 10, None, "2024-01-01", "", text)


def test_comments_strings_and_numbers_do_not_hide_a_copy():
    assert tokens('x = f("a.csv", 3)  # read it') == ["x", "=", "f", "(", "S", ",", "0", ")"]
    disguised = (
        NOTEBOOK_CODE.replace("../input/", "/data/").replace("500", "800").replace("random_state=0", "random_state=42")
    )
    disguised = "# my own solution\n" + disguised.replace("\n", "  # step\n")
    community = CommunityCode(0.5, items=[_item("k1", "notebook", f"Intro.\n```python\n{NOTEBOOK_CODE}```\nThanks!")])
    found = community.closest(disguised)
    assert found is not None and found.item == "k1" and found.share == 1.0 and found.near_copy


def test_an_independent_script_overlaps_little_and_is_not_a_near_copy():
    community = CommunityCode(0.5, items=[_item("k1", "notebook", f"```python\n{NOTEBOOK_CODE}```")])
    found = community.closest(GOOD)
    assert found is not None and found.share < 0.2 and not found.near_copy


def test_the_code_of_each_kind_of_item():
    assert item_code(_item("k1", "post", "Use LightGBM. No code here.")) == ""
    assert "RandomForest" in item_code(_item("k2", "script", NOTEBOOK_CODE))  # a script stored bare
    assert item_code(_item("k3", "script", "```python\nprint(1)\n```")) == "print(1)\n"
    assert shingles("x = 1") == frozenset()  # shorter than one run: nothing to compare
    assert CommunityCode(0.5, items=[_item("k1", "post", "no code")]).closest(GOOD) is None


def test_a_planted_copy_of_a_knowledge_script_is_labelled_a_near_copy_with_its_overlap(tmp_path):
    from typer.testing import CliRunner

    from mlguild.cli.app import app

    llm = ScriptedLLM(default=FULL)  # every node's script is GOOD
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 2})
    # A community script that is GOOD with other comments, added once the run exists: the
    # pools read the knowledge folder again when it changes.
    copied = tmp_path / "public-solution.py"
    copied.write_text("# ---\n# title: My public solution\n# date: 2024-01-01\n# ---\n# a great notebook\n" + GOOD)
    stored = add_items(run.task_root, [copied, FIXTURES / "baseline.py"], None).added[0]
    agent.run_loop()

    reports = agent.session.pools.reports.all()
    assert reports and all(r.near_copy and r.overlap == 1.0 and r.overlap_item == stored.id for r in reports)
    node = reports[0].node
    report_md = (run.node_dir(node) / "report.md").read_text()
    assert f"a near-copy: 100% of its script's token runs are in the code of community item {stored.id}" in report_md
    assert "a near-copy of community item" in reports[0].digest()  # what the other nodes' prompts show

    status = CliRunner().invoke(app, ["status", str(run.path)], env={"COLUMNS": "200"})
    assert status.exit_code == 0, status.output
    assert f"code from the community: at most 100% of a script ({reports[0].node}" in status.output
    assert f"near-copies {len(reports)} of {len(reports)}" in status.output
    agent.session.close()
    from mlguild.view.report import write_report

    write_report(run.path)
    assert f"item {stored.id}); near-copies: {len(reports)}" in (run.path / "report.md").read_text()


def test_without_community_code_no_overlap_is_claimed(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 1})
    add_items(run.task_root, [FIXTURES / "forum-target-encoding.md"], None)  # a post: prose, no code
    agent.run_loop()
    assert all(r.overlap is None and not r.near_copy for r in agent.session.pools.reports.all())


# ------------------------------------------------------------------ the guild of runs


@pytest.mark.slow  # three short recipe runs
def test_a_second_run_of_a_task_starts_with_the_first_runs_reports_and_gains(tmp_path):
    from conftest import make_task, mlguild

    from mlguild.pools import Pools

    task = make_task(tmp_path / "t")
    run = ("run", str(task), "--brain", "recipes", "--runs-dir", "runs", "--sandbox", "local")
    first = mlguild(*run, "-n", "2", "--run-id", "a", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "guild:" not in first.stdout  # nothing earlier to read

    listed = mlguild("knowledge", "list", "--task", str(task), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "from earlier runs of this task (the guild" in listed.stdout
    assert all(f"a/n000{i}" in listed.stdout for i in (1, 2)), listed.stdout

    second = mlguild(*run, "-n", "1", "--run-id", "b", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "guild: 2 report(s) of 1 earlier run(s) of this task" in second.stdout, second.stdout
    pools = Pools.open(tmp_path / "runs" / "b")
    try:
        keys = set(pools.store.keys("reports"))
        assert {"a/n0001", "a/n0002"} <= keys and "n0001" in keys  # the earlier run's, and its own
        earlier = pools.reports.get("a/n0001")
        assert earlier.run == "a" and "in run a" in earlier.result
        from_runs = [i for i in pools.ideas.all() if any(s.kind == "run" for s in i.sources)]
        assert from_runs and all(s.item.startswith("a/") for i in from_runs for s in i.sources)
        assert "earlier run's node a/" in from_runs[0].line()
    finally:
        pools.close()

    # a resume reads them once: nothing is added twice
    third = mlguild("resume", str(tmp_path / "runs" / "b"), "-n", "2", cwd=tmp_path)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "guild:" not in third.stdout
