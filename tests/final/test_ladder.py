"""The baseline ladder: the harness's reference models run and scored like any node, skipped
with a journaled reason where a run cannot have them, and the ladder in final.json, `status`
and `status --json`."""

from __future__ import annotations

import json

import pytest
from conftest import make_task, mlguild

from mlguild.config import load_config
from mlguild.core.errors import MoveUnavailable
from mlguild.core.graph import Node, SearchGraph
from mlguild.core.vocabulary import Op, Status
from mlguild.final.ladder import ladder, ladder_lines
from mlguild.launch import start
from mlguild.run.references import reference_proposal
from mlguild.rundir.journal import read_journal


def _node(node_id: str, score: float | None, **meta) -> Node:
    status = Status.SCORED if score is not None else "crash"
    return Node(node_id, Op.DRAFT, (), 0, meta=meta, status=status, score=score)


def test_headroom_is_the_share_of_the_floor_to_ceiling_gap_in_either_direction():
    graph = SearchGraph("minimize")
    for node in (
        _node("n0001", 0.30, reference="lightgbm"),
        _node("n0002", None, reference="linear"),
        _node("n0003", 0.2),
    ):
        graph.add(node)
    records = [{"type": "run_started", "floor_score": 0.5, "prior_floor_score": 0.45}]
    choice = {"node": "n0004", "base": "n0003", "refit": True}
    doc = ladder(records, graph, "n0003", choice, "rmse", reference_score=0.05)
    rungs = {r["rung"]: r for r in doc["rungs"]}
    assert [r["rung"] for r in doc["rungs"]] == ["floor", "linear", "lightgbm", "best", "final", "ceiling"]
    assert rungs["floor"]["score"] == 0.45  # the better of the two constants (lower error)
    assert rungs["ceiling"]["score"] == 0.05 and rungs["ceiling"]["what"] == "--reference-score"
    assert rungs["lightgbm"]["headroom"] == pytest.approx((0.30 - 0.45) / (0.05 - 0.45), abs=1e-4)
    assert rungs["linear"]["score"] is None and rungs["linear"]["what"] == "crash"
    assert rungs["best"]["headroom"] == pytest.approx(0.625) and rungs["final"]["score"] == 0.2
    assert rungs["best"]["gained"] == pytest.approx(0.625 - 0.375)  # over lightgbm, the last rung with a score
    assert "refit of n0003" in rungs["final"]["what"]
    assert all(len(line) <= 80 for line in ladder_lines(doc))

    default = ladder(records, graph, "n0003", None, "rmse")
    assert default["rungs"][-1]["score"] == 0.0 and default["rungs"][-1]["what"] == "the metric's best value"
    assert default["rungs"][4]["what"] == "not chosen yet"


def test_a_shape_without_a_linear_model_has_no_linear_rung():
    with pytest.raises(MoveUnavailable, match="no regularised linear model for a ranked_lists task"):
        reference_proposal("linear", {"task_type": "ranking", "metric": "map_at_k"}, {})
    with pytest.raises(MoveUnavailable, match="grouped_ranking"):
        reference_proposal("linear", {"task_type": "ranking", "metric": "ndcg_at_k"}, {})


def test_every_run_has_its_reference_models_scored_as_nodes_and_the_ladder_shows_them(tmp_path):
    task = make_task(tmp_path / "task", n=240)
    done = start(task, load_config(None, ["budget.iterations=6", "brain.name=recipes", "final.reference_score=0.99"]),
                 runs_dir=tmp_path / "runs", run_id="r")  # fmt: skip
    run = tmp_path / "runs" / "r"
    graph = done.run and [r for r in read_journal(run / "journal.jsonl") if r["type"] == "node_started"]
    references = {r["node"]["meta"].get("reference"): r["node"] for r in graph if r["node"]["meta"].get("reference")}
    assert set(references) == {"lightgbm", "linear"}
    assert [r["node"]["id"] for r in graph[:2]] == ["n0001", "n0002"]  # the first search nodes
    assert references["linear"]["meta"]["recipe"] == "linear" and references["linear"]["op"] == Op.DRAFT
    finished = {r["id"]: r for r in read_journal(run / "journal.jsonl") if r["type"] == "node_finished"}
    assert all(finished[n["id"]]["status"] == Status.SCORED for n in references.values())  # by the harness

    final = json.loads((run / "final" / "final.json").read_text())
    rungs = {r["rung"]: r for r in final["ladder"]["rungs"]}
    linear = finished[references["linear"]["id"]]
    # Every rung on the floor's scale: a node ranked by a pooled score (a small holdout) shows
    # its holdout part, and says what pooled score ranked it.
    assert rungs["linear"]["node"] == linear["id"] and rungs["linear"]["score"] == linear.get(
        "holdout_score", linear["score"]
    )
    if linear.get("score_kind") == "pooled":
        assert f"ranked by pooled {linear['score']:.5g}" in rungs["linear"]["what"]
    assert rungs["ceiling"]["score"] == 0.99 and rungs["floor"]["headroom"] == 0.0
    assert rungs["final"]["node"] == final["node"]

    status = mlguild("status", "r", cwd=tmp_path, env={"COLUMNS": "80"})
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert any(line.startswith("baseline ladder (roc_auc") for line in lines)
    assert any(line.startswith("  linear ") and references["linear"]["id"] in line for line in lines)
    assert any(line.startswith("autonomy: no intervention; 6 nodes") for line in lines)
    assert any(line.startswith("resources: 6 of 6 iterations") for line in lines)
    assert all(len(line) <= 80 for line in lines if not line.startswith(("run ", "final submission"))), lines

    doc = json.loads(mlguild("status", "r", "--json", cwd=tmp_path).stdout)
    assert doc["format"] == 1 and doc["run"]["id"] == "r" and doc["task"]["metric"] == "roc_auc"
    assert doc["budget"]["iterations"] == 6 and doc["resources"]["iterations"] == 6
    assert [n["id"] for n in doc["nodes"]] == sorted(n["id"] for n in doc["nodes"])
    first = doc["nodes"][0]
    assert set(first) >= {"id", "parents", "op", "status", "score", "oof_score", "title", "seconds", "reference"}
    assert first["reference"] == "lightgbm" and first["parents"] == []
    assert doc["best"]["id"] and doc["final"]["node"] == final["node"]
    assert [r["rung"] for r in doc["ladder"]["rungs"]][-1] == "ceiling"
    assert doc["autonomy"]["interventions"] == 0 and doc["resources"]["tokens"] == 0


def test_a_small_iteration_budget_skips_the_ladder_with_its_reason(tmp_path):
    task = make_task(tmp_path / "task")
    start(
        task, load_config(None, ["budget.iterations=2", "brain.name=recipes"]), runs_dir=tmp_path / "runs", run_id="r"
    )
    records = read_journal(tmp_path / "runs" / "r" / "journal.jsonl")
    skipped = [r for r in records if r["type"] == "reference_skipped"]
    assert [r["rung"] for r in skipped] == ["lightgbm", "linear"]
    assert "iteration budget (2) is under 6" in skipped[0]["reason"] and "--iterations 6" in skipped[0]["fix"]
    started = [r["node"] for r in records if r["type"] == "node_started"]
    assert not any(n["meta"].get("reference") for n in started)
    final = json.loads((tmp_path / "runs" / "r" / "final" / "final.json").read_text())
    linear = next(r for r in final["ladder"]["rungs"] if r["rung"] == "linear")
    assert linear["score"] is None and linear["what"].startswith("skipped: the iteration budget")


def test_the_ladder_can_be_turned_off_and_a_dry_run_has_none(tmp_path):
    task = make_task(tmp_path / "task")
    start(task, load_config(None, ["budget.iterations=6", "brain.name=scripted", "final.refit=false"]),
          runs_dir=tmp_path / "runs", run_id="dry")  # fmt: skip
    records = read_journal(tmp_path / "runs" / "dry" / "journal.jsonl")
    assert not [r for r in records if r["type"] == "reference_skipped"]
    assert not any(r["node"]["meta"].get("reference") for r in records if r["type"] == "node_started")
