"""The result section of report.md: harness numbers only, the same for every brain."""

from __future__ import annotations

import json

from mlguild.core.graph import Node, SearchGraph
from mlguild.run.executor import parse_printed_score
from mlguild.run.node_report import result_lines


def _add(graph, op, score, parents=(), exec_s=2.0, meta=None, status=None):
    node = graph.add(Node(id=graph.next_id(), op=op, parents=tuple(parents), iteration=len(graph), meta=meta or {}))
    node.status = status or ("scored" if score is not None else "crash")
    node.score, node.timing = score, {"exec_s": exec_s}
    return node


def test_an_improve_is_compared_with_its_parent_and_the_best_before_it(tmp_path):
    graph = SearchGraph("minimize")
    first = _add(graph, "draft", 0.30)
    _add(graph, "draft", 0.20)
    child = _add(graph, "improve", 0.25, [first.id], exec_s=4.0, meta={"move": "log_target", "recipe": "lightgbm"})
    text = "\n".join(result_lines(child, graph, "rmse", tmp_path))
    assert "against its parent n0001 (0.3): -0.05, better" in text
    assert "against the best node before it, n0002 (0.2): +0.05, worse" in text
    assert "lesson: `log_target` better on lightgbm here" in text
    assert "run time 4.0 s (parent 2.0 s, ×2.00)" in text


def test_failures_and_blends(tmp_path):
    graph = SearchGraph("maximize")
    a, b = _add(graph, "draft", 0.8), _add(graph, "draft", 0.7)
    failed = _add(graph, "improve", None, [a.id], meta={"move": "more_trees"})
    failed.failure = "Traceback...\nMemoryError: cannot allocate"
    text = "\n".join(result_lines(failed, graph, "roc_auc", tmp_path))
    assert (
        "failed as `crash`: MemoryError: cannot allocate" in text and "`more_trees` on n0001 ended in `crash`" in text
    )
    fuse = _add(graph, "blend", 0.85, [a.id, b.id])
    (tmp_path / "output").mkdir()
    (tmp_path / "output" / "fuse_weights.json").write_text(
        json.dumps(
            {
                "weights": {a.id: 0.75, b.id: 0.25},
                "oof_metric": "roc_auc",
                "member_oof_scores": {a.id: 0.79, b.id: 0.69},
                "blend_oof_score": 0.81,
            }
        )
    )
    text = "\n".join(result_lines(fuse, graph, "roc_auc", tmp_path))
    assert "better" in text and f"{a.id} 0.75, {b.id} 0.25" in text and "blend 0.81" in text
    assert "ensemble:" not in text  # a blend written before stacks names no choice
    report = json.loads((tmp_path / "output" / "fuse_weights.json").read_text())
    report.update(method="stack_lgbm", cross_validated_scores={"selection": 0.8, "stack_lgbm": 0.83})
    (tmp_path / "output" / "fuse_weights.json").write_text(json.dumps(report))
    text = "\n".join(result_lines(fuse, graph, "roc_auc", tmp_path))
    assert "ensemble: stack_lgbm, chosen by cross-validated out-of-fold roc_auc: selection 0.8, stack_lgbm 0.83" in text


def test_printed_scores_are_read_with_trailing_words():
    assert parse_printed_score("fold 0: 1.0s\ncv_score: 0.84277  (roc_auc on 4507 rows, 5 folds)\n") == 0.84277
    assert parse_printed_score("cv_score: 0.5x") is None
    assert parse_printed_score("nothing here") is None
