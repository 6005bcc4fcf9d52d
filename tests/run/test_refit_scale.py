"""The final stage's reserve follows what refits measured (mlguild.run.reserve): each model
family's scale (a refit's seconds over its node's seconds in the search, per unit of
growth of the training file) from this run's refits, else from the memory's refits of
other runs on tasks about this size, else the conservative default. Times are the nodes'
recorded timings, never this machine's speed."""

from __future__ import annotations

import pytest
from conftest import make_task

from mlguild.config import MemoryConfig, load_config
from mlguild.core.graph import Node, SearchGraph
from mlguild.core.vocabulary import Op, Status
from mlguild.memory import Memory, TaskTraits
from mlguild.run.refit import DEFAULT_SCALE, growth
from mlguild.run.reserve import RefitScales, final_reserve, refit_family, refit_scale
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task

MARGIN = 1.1  # over the median of the measured scales (mlguild.run.reserve._MARGIN)


@pytest.fixture
def run(tmp_path):
    cfg = load_config(None, ["budget.iterations=5"])
    return create_run(load_task(make_task(tmp_path / "task", n=300)), cfg, tmp_path / "runs")


def _scored(node_id: str, recipe: str, exec_s: float, score: float = 0.8) -> Node:
    node = Node(node_id, Op.DRAFT, (), int(node_id[1:]), status=Status.SCORED, score=score)
    node.meta = {"brain": "recipes", "recipe": recipe}
    node.timing = {"exec_s": exec_s, "budget_s": 120.0}
    return node


def _refit(node_id: str, of: Node, exec_s: float, status: str = Status.FINAL_OK) -> Node:
    refit = Node(node_id, Op.REFIT, (of.id,), int(node_id[1:]), status=status)
    refit.meta = {"refit_of": of.id}
    refit.timing = {"exec_s": exec_s}
    return refit


def test_the_reserve_follows_the_measured_refit_scale_of_the_nodes_family(run):
    graph = SearchGraph("maximize")
    best = graph.add(_scored("n0001", "lightgbm", exec_s=10.0, score=0.9))
    grow = growth(run)
    scales = RefitScales()
    # Nothing measured a refit yet: linear in rows.
    assert final_reserve(run, graph, scales=scales).refit_s == pytest.approx(10.0 * grow * DEFAULT_SCALE)
    # A resume's earlier final stage refitted it in 0.6 of the linear time: that is the scale now.
    graph.add(_refit("n0002", best, exec_s=10.0 * grow * 0.6))
    assert final_reserve(run, graph, scales=scales).refit_s == pytest.approx(10.0 * grow * 0.6 * MARGIN)
    # It is the family's: a CatBoost node's refit still has the default, and a blend of both sums them.
    cat = graph.add(_scored("n0003", "catboost", exec_s=20.0))
    assert scales.of(run, graph)(cat) == DEFAULT_SCALE and scales.of(run, graph)(best) == pytest.approx(0.6 * MARGIN)
    blend = Node("n0004", Op.BLEND, ("n0001", "n0003"), 4, status=Status.SCORED, score=0.95)
    blend.timing = {"exec_s": 1.0}
    graph.add(blend)
    # (the blend's own rerun at its search seconds: it reads stored predictions)
    expected = grow * (10.0 * 0.6 * MARGIN + 20.0 * DEFAULT_SCALE) + 1.0 * DEFAULT_SCALE
    assert final_reserve(run, graph, scales=scales).refit_s == pytest.approx(expected)
    # A refit that failed or was cut short says nothing of how long one takes.
    assert refit_scale(_refit("n0005", cat, 5.0, status="timeout"), cat, grow) is None


def test_a_refit_on_part_of_the_labelled_rows_is_measured_against_the_rows_it_trained_on(run):
    # Short of time, the final stage refitted on a share of the rows: 1.5 times the search's,
    # not every labelled row. Its 12 s are a scale of 12 / (10 x 1.5), not 12 / (10 x growth).
    graph = SearchGraph("maximize")
    best = graph.add(_scored("n0001", "lightgbm", exec_s=10.0, score=0.9))
    part = _refit("n0002", best, exec_s=12.0)
    part.meta["refit_growth"] = 1.5
    assert refit_scale(part, best, growth(run)) == pytest.approx(0.8)
    graph.add(part)
    assert RefitScales().measured(run, graph) == {"recipe lightgbm": [pytest.approx(0.8)]}


def test_a_memory_prior_is_used_when_the_run_has_not_measured_a_refit(run):
    graph = SearchGraph("maximize")
    best = graph.add(_scored("n0001", "lightgbm", exec_s=10.0, score=0.9))
    grow = growth(run)
    # Other tasks' refits of the family: the largest counts (one family's scale differs by task).
    scales = RefitScales(other_tasks={"recipe lightgbm": [0.5, 1.5, 0.6]})
    assert final_reserve(run, graph, scales=scales).refit_s == pytest.approx(10.0 * grow * 1.5 * MARGIN)
    # Earlier runs of this very task: their median, and other tasks' no longer count.
    scales = RefitScales({"recipe lightgbm": [0.5, 0.9, 0.6]}, {"recipe lightgbm": [1.5]})
    assert final_reserve(run, graph, scales=scales).refit_s == pytest.approx(10.0 * grow * 0.6 * MARGIN)
    # This run's own measurement joins them, once there is one.
    graph.add(_refit("n0002", best, exec_s=10.0 * grow * 1.4))
    graph.add(_refit("n0003", best, exec_s=10.0 * grow * 1.2))
    assert final_reserve(run, graph, scales=scales).refit_s == pytest.approx(10.0 * grow * 0.9 * MARGIN)


def test_the_memory_keeps_refit_scales_for_runs_on_tasks_about_this_size(tmp_path):
    traits = TaskTraits("binary", "roc_auc", 1000, 10, "tabular", 0.0, 5)
    cfg = MemoryConfig(path=str(tmp_path / "memory.sqlite"))
    first = Memory.open("run-1", "task-a", traits, cfg, tmp_path)
    first.keep_refit("n0009", "recipe lightgbm", rows=1000, scale=0.55)
    first.keep_refit("n0010", "blend", rows=1000, scale=0.9)
    Memory.open("run-2", "task-b", traits, cfg, tmp_path).keep_refit("n0004", "recipe lightgbm", rows=2500, scale=0.8)
    later = Memory.open("run-3", "task-c", traits, cfg, tmp_path)
    assert later.refit_scales(1200) == ({}, {"recipe lightgbm": [0.8, 0.55], "blend": [0.9]})  # newest first
    again = Memory.open("run-5", "task-a", traits, cfg, tmp_path)  # task-a again: its own come apart
    assert again.refit_scales(1000) == ({"recipe lightgbm": [0.55], "blend": [0.9]}, {"recipe lightgbm": [0.8]})
    bigger = Memory.open("run-4", "task-d", traits, cfg, tmp_path)
    assert bigger.refit_scales(100_000) == ({}, {})  # a task of another size: none carries
    assert first.refit_scales(1000) == ({}, {"recipe lightgbm": [0.8]})  # never a run's own
    # The family a refit is learned under: the recipe, else the model library, else the kind of node.
    node = _scored("n0001", "catboost", 1.0)
    assert refit_family(node, "") == "recipe catboost"
    node.meta = {}
    assert refit_family(node, "import xgboost as xgb\n") == "xgboost"
    assert refit_family(node, "import numpy\n") == "script"
