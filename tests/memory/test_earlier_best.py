"""A second run on a task starts where the first ended: the memory keeps each recipe node's
settings, and the recipe brain's first node makes the earlier run's best again."""

from __future__ import annotations

import dataclasses
import json

from conftest import make_task

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.earlier import settings_key
from mlguild.config import load_config, mlguild_home
from mlguild.memory import MemoryStore, TaskTraits
from mlguild.memory.experience import Experience
from mlguild.memory.priors import earlier_bests
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

TRAITS = TaskTraits("binary", "roc_auc", 5000, 20, "tabular", 0.01, 12)


def _config(recipe: str, lr: float = 0.05, **extra) -> dict:
    return {"recipe": recipe, "params": {"learning_rate": lr}, "features": {}, "run": {"n_folds": 5}, **extra}


def _exp(run: str, node: str, score: float | None, config: dict | None, task: str = "t", op: str = "draft"):
    """A record as a run writes it, naming no run best (as records written before it did)."""
    return Experience(
        run=run,
        task=task,
        node=node,
        op=op,
        status="scored" if score is not None else "crash",
        outcome="first" if score is not None else "failed",
        title=node,
        plan="",
        change="",
        recipe=str((config or {}).get("recipe", "")),
        move="",
        score=score,
        parent="",
        parent_score=None,
        gain_spreads=None,
        cost_ratio=None,
        exec_s=2.0,
        traits=TRAITS,
        config=config,
    )


def test_the_earlier_bests_are_each_runs_best_or_its_blends_members_on_this_task_only():
    records = [
        # run a: its best is a blend of n1 (a reference) and n2; n3 scored less than the blend
        _exp("a", "n1", 0.80, _config("lightgbm", reference="lightgbm")),
        _exp("a", "n2", 0.82, _config("catboost")),
        _exp("a", "n3", 0.81, _config("xgboost")),
        _exp("a", "n4", 0.84, {"fuse": ["n1", "n2"]}, op="blend"),
        # run b: its search chose the improve n2 (its newest record says so), though the draft
        # n4 scored higher once (its re-runs' mean did not hold up); a failure has no score
        _exp("b", "n1", 0.79, _config("lightgbm")),
        _exp("b", "n2", 0.83, _config("lightgbm", 0.025, moves=["lower_lr_more_rounds"]), op="improve"),
        _exp("b", "n4", 0.835, _config("xgboost")),
        dataclasses.replace(_exp("b", "n5", None, _config("linear")), run_best="n2"),
        # another task's best, far better, and a record of this task with other traits
        _exp("c", "n1", 0.99, _config("random_forest"), task="other"),
        dataclasses.replace(_exp("d", "n1", 0.95, _config("hist_gb")), traits=dataclasses.replace(TRAITS, rows=50)),
    ]
    found = earlier_bests(records, "t", TRAITS)
    # Run a (best 0.84; records that name no run best: the best score) first: the blend's
    # members, the better one first; then the node run b's search chose.
    assert [(f.run, f.node, f.best) for f in found] == [("a", "n2", "n4"), ("a", "n1", "n4"), ("b", "n2", "n2")]
    assert found[1].config["reference"] == "lightgbm"
    assert found[2].config["moves"] == ["lower_lr_more_rounds"] and found[2].score == 0.83
    assert earlier_bests(records, "nothing-like-it", TRAITS) == []
    # The records round-trip through the store with their settings; an older record has none.
    store = MemoryStore()
    store.add(records[5])  # run b's n2
    older = {k: v for k, v in records[0].to_dict().items() if k != "config"}
    store._db.execute(  # a record written before Experience had a config field
        "INSERT INTO experiences (run, node, task, op, outcome, move, task_type, metric, created, record)"
        " VALUES ('old', 'n1', 't', 'draft', 'first', '', 'binary', 'roc_auc', 0, ?)",
        (json.dumps({**older, "a_field_of_a_newer_version": 1}),),
    )
    (_, newer), (_, old) = sorted(store.recent(5), key=lambda r: r[1].run)[::-1]
    assert newer.config == records[5].config and old.config is None and old.node == "n1"


def test_a_second_run_makes_the_first_runs_best_first_then_the_baseline_ladder(tmp_path):
    task = load_task(make_task(tmp_path / "task", n=400))
    sets = ["budget.iterations=6", "search.num_drafts=3", "search.policy=greedy", "search.fuse_every=0"]
    cfg = load_config(None, sets)
    first = create_run(task, cfg, tmp_path / "runs", run_id="first")
    first_agent = Agent(open_session(first, RecipeBrain(), get_sandbox("local")))
    first_agent.run_loop()
    graph = first_agent.session.state.graph
    best = graph.best()
    assert best is not None and not best.is_blend
    stored = {e.node: e for _, e in MemoryStore(mlguild_home() / "memory.sqlite").recent(50, run="first")}
    assert settings_key(stored[best.id].config or {}) == settings_key(best.meta)

    second = create_run(task, cfg, tmp_path / "runs", run_id="second")
    agent = Agent(open_session(second, RecipeBrain(), get_sandbox("local")))
    agent.run_loop()
    nodes = list(agent.session.state.graph)
    made = nodes[0]
    assert made.meta["recalled"] == f"first/{best.id}"
    assert settings_key(made.meta) == settings_key(best.meta)  # the same script's settings
    assert "in earlier runs" in made.plan and f"`{best.id}` of run `first`" in made.plan
    # The baseline ladder follows (a recalled reference model stands for its own rung), once each.
    rungs = [n.meta["reference"] for n in nodes if n.meta.get("reference")]
    assert sorted(rungs) == ["lightgbm", "linear"]
    # Nor does an improve of a reference model count as a rung. The best is not made twice.
    assert sum(settings_key(n.meta) == settings_key(best.meta) for n in nodes if n.op == "draft") == 1


def test_a_run_on_another_task_does_not_make_that_tasks_best(tmp_path):
    first_task = load_task(make_task(tmp_path / "first", n=400))
    cfg = load_config(None, ["budget.iterations=2", "search.num_drafts=2", "search.policy=greedy"])
    first = Agent(
        open_session(
            create_run(first_task, cfg, tmp_path / "runs", run_id="first"), RecipeBrain(), get_sandbox("local")
        )
    )
    first.run_loop()
    other = load_task(make_task(tmp_path / "other", n=400, seed=1))
    agent = Agent(
        open_session(create_run(other, cfg, tmp_path / "runs", run_id="second"), RecipeBrain(), get_sandbox("local"))
    )
    assert agent.session.memory.earlier_bests() == []
    # But where tuning a family starts is what its best node was on the similar task (from the store).
    made = {n.meta["recipe"]: n for n in first.session.state.graph if n.ok and n.meta.get("recipe")}
    configs = agent.session.memory.family_configs()
    assert set(configs) == set(made)
    for family, node in made.items():
        ((weight, params),) = configs[family]
        assert params == node.meta["params"] and 0 < weight <= 1
    agent.run_loop()
    assert not any(n.meta.get("recalled") for n in agent.session.state.graph)
