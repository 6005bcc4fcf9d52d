"""A metric scored on some rows only (MLE-bench's ventilator grader: the MAE where the input
column ``u_out`` is 0): named with ``--metric "mae where u_out=0"`` or ``metric_params.scored_rows``,
refused in one line naming that fix when a description says rows go unscored, sealed beside the
labels (taken from the test file where the answers lack it) and scored so by the harness."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mlguild.config import load_config
from mlguild.core.errors import TaskError
from mlguild.launch import Finished, start
from mlguild.metrics import get_metric
from mlguild.scoring.scorer import score_submission
from mlguild.scoring.submission import SubmissionFormat
from mlguild.sources.columns import metric_with_params
from mlguild.sources.infer import infer_task
from mlguild.task.spec import TaskSpec

EVALUATION = (
    "The competition will be scored as the mean absolute error between the predicted and actual pressures "
    "during the inspiratory phase of each breath. The expiratory phase is not scored."
)


def ventilator_folder(root, rows: int = 480):
    """An MLE-bench-shaped folder: whole breaths of 8 steps; the pressure follows u_in while the
    valve is shut (u_out 0) and is noise once it opens, so a score over every row differs. The
    private answers keep only the id and the label, as a grader may."""
    rng = np.random.default_rng(0)
    step = np.arange(rows) % 8
    frame = pd.DataFrame(
        {
            "id": np.arange(1, rows + 1),
            "breath_id": np.arange(rows) // 8,
            "R": rng.choice([5, 20, 50], rows),
            "time_step": step * 0.1,
            "u_in": rng.uniform(0, 100, rows),
            "u_out": (step >= 5).astype(int),
        }
    )
    inspiring = frame["u_out"] == 0
    frame["pressure"] = np.where(inspiring, 5 + 0.3 * frame["u_in"], rng.uniform(0, 60, rows))
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    train, test = frame.iloc[: rows * 3 // 4], frame.iloc[rows * 3 // 4 :]
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns="pressure").to_csv(public / "test.csv", index=False)
    test[["id"]].assign(pressure=0).to_csv(public / "sample_submission.csv", index=False)
    test[["id", "pressure"]].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(f"# Ventilator\n\n## Evaluation\n\n{EVALUATION}\n")
    return root


def test_the_metric_option_names_the_rows_it_scores():
    assert metric_with_params("mae where u_out=0") == ("mae", {"scored_rows": {"u_out": 0}})
    assert metric_with_params("MAP@5 WHERE split == 'public', weight=0.5") == (
        "map_at_k",
        {"k": 5, "scored_rows": {"split": "public", "weight": 0.5}},
    )
    assert metric_with_params("rmse") == ("rmse", {})
    with pytest.raises(TaskError, match="cannot read 'u_out' as COLUMN=VALUE"):
        metric_with_params("mae where u_out")


def test_a_spec_names_input_columns_and_one_value_each():
    base = dict(
        name="v", task_type="regression", metric="mae", id_column="id", target_columns=["pressure"],
        submission_columns=["id", "pressure"],
    )  # fmt: skip
    spec = TaskSpec(**base, metric_params={"scored_rows": {"u_out": 0}})
    assert spec.scored_rows == {"u_out": 0} and spec.metric_input_columns == ["u_out"]
    for wrong, words in [
        ({"pressure": 0}, "name an input column"),
        ({"id": 1}, "name an input column"),
        ({"u_out": [0, 1]}, "one plain value"),
        ([], "must map input columns"),
    ]:
        with pytest.raises(ValueError, match=words):
            TaskSpec(**base, metric_params={"scored_rows": wrong})


def test_only_the_scored_rows_count_in_the_score_and_its_resamples(tmp_path):
    answers = pd.DataFrame(
        {"id": ["1", "2", "3", "4"], "pressure": ["10", "20", "30", "40"], "u_out": ["0", "0.0", "1", "1"]}
    )
    path = tmp_path / "sub.csv"
    pd.DataFrame({"id": [1, 2, 3, 4], "pressure": [10, 20, 0, 0]}).to_csv(path, index=False)
    fmt, mae = SubmissionFormat("id", ["id", "pressure"]), get_metric("mae")
    scored = score_submission(path, answers, fmt, mae, ["pressure"], {"scored_rows": {"u_out": 0}})
    assert scored.score.value == 0.0  # "0.0" is the value 0 too
    assert score_submission(path, answers, fmt, mae, ["pressure"]).score.value == 17.5
    with pytest.raises(ValueError, match="no row holds"):
        score_submission(path, answers, fmt, mae, ["pressure"], {"scored_rows": {"u_out": 2}})
    with pytest.raises(ValueError, match="not in the answers"):
        score_submission(path, answers, fmt, mae, ["pressure"], {"scored_rows": {"valve": 0}})


def test_unscored_rows_are_refused_with_the_fix_and_the_option_infers_the_task(tmp_path):
    folder = ventilator_folder(tmp_path / "ventilator")
    with pytest.raises(TaskError, match="leaves some rows unscored") as refused:
        infer_task(folder)
    assert '--metric "NAME where COLUMN=VALUE"' in refused.value.fix
    spec = infer_task(folder, metric="mae where u_out=0").spec
    assert (spec.metric, spec.metric_params, spec.target_columns) == (
        "mae",
        {"scored_rows": {"u_out": 0}},
        ["pressure"],
    )
    with pytest.raises(TaskError, match="by the column 'valve'"):
        infer_task(folder, metric="mae where valve=0")


@pytest.mark.slow
def test_a_run_scores_the_holdout_and_grades_the_test_set_on_the_scored_rows_only(tmp_path):
    pytest.importorskip("lightgbm")
    folder = ventilator_folder(tmp_path / "ventilator")
    sets = ["brain.name=recipes", "budget.iterations=1", "final.reference_models=false", "memory.enabled=false"]
    done = start(folder, load_config(None, sets), runs_dir=tmp_path / "runs", metric="mae where u_out=0")
    assert isinstance(done, Finished) and done.best is not None
    run, mae = done.run.path, get_metric("mae")
    sealed = pd.read_csv(run / "sealed" / "holdout_answers.csv", dtype={"id": str})
    assert list(sealed.columns) == ["id", "pressure", "u_out"]
    assert "only the rows where u_out = 0" in (run / "brief.md").read_text()  # what every prompt shows
    node = done.run.node_dir(done.best.id)
    held = pd.read_csv(node / "output" / "holdout.csv", dtype={"id": str}).set_index("id").loc[sealed["id"]]
    inspiring = (sealed["u_out"] == 0).to_numpy()
    assert 0 < inspiring.sum() < len(sealed)
    by_hand = mae(sealed["pressure"][inspiring], held["pressure"][inspiring])
    (finished,) = [r for r in done.run.journal.records if r["type"] == "node_finished" and r["id"] == done.best.id]
    assert finished["holdout_score"] == pytest.approx(by_hand)
    assert finished["holdout_score"] != pytest.approx(mae(sealed["pressure"], held["pressure"]))

    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    test = pd.read_csv(folder / "prepared" / "public" / "test.csv", dtype={"id": str}).set_index("id")
    answers = pd.read_csv(folder / "prepared" / "private" / "answers.csv", dtype={"id": str})
    graded = next(p for p in (run / "final" / "submission.csv", run / "best" / "submission.csv") if p.exists())
    submitted = pd.read_csv(graded, dtype={"id": str}).set_index("id").loc[answers["id"]]
    scored = (test.loc[answers["id"], "u_out"] == 0).to_numpy()  # the answers lack u_out: the test file has it
    expected = mae(answers["pressure"][scored], submitted["pressure"][scored])
    assert grade["test_score"] == pytest.approx(expected)
