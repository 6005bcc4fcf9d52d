"""A metric averaged over the groups of an input column (CHAMPS' log MAE per coupling type):
inferred from the description's words with the column they name, sealed beside the labels
(taken from the test file where the answers lack it), and scored so by the harness."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mlguild.config import load_config
from mlguild.core.errors import TaskError
from mlguild.launch import Finished, start
from mlguild.metrics import get_metric
from mlguild.sources.infer import infer_task

pytest.importorskip("lightgbm")

EVALUATION = (
    "Submissions are evaluated on the Log of the Mean Absolute Error, calculated for each scalar coupling "
    "type, and then averaged across types, so that a 1% decrease in MAE for one type provides the same "
    "improvement in score as a 1% decrease for another type."
)
SCALE = {"1JHC": 100.0, "2JHH": 10.0, "3JHC": 1.0}


def champs_folder(root, evaluation: str = EVALUATION, rows: int = 400, answers_type: bool = False):
    """An MLE-bench-shaped folder: public train, test and sample; private answers (without the
    type column unless ``answers_type``, as a grader may keep only the labels)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": range(rows),
            "molecule_name": [f"dsgdb9nsd_{i // 4:06d}" for i in range(rows)],
            "atom_index_0": rng.integers(0, 20, rows),
            "type": np.array(list(SCALE))[rng.integers(0, 3, rows)],
            "distance": rng.uniform(1, 3, rows),
        }
    )
    frame["scalar_coupling_constant"] = frame["type"].map(SCALE) * (frame["distance"] - 2 + rng.normal(0, 0.1, rows))
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    train, test = frame.iloc[: rows * 3 // 4], frame.iloc[rows * 3 // 4 :]
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns="scalar_coupling_constant").to_csv(public / "test.csv", index=False)
    test[["id"]].assign(scalar_coupling_constant=0).to_csv(public / "sample_submission.csv", index=False)
    answers = ["id", *(["type"] if answers_type else []), "scalar_coupling_constant"]
    test[answers].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(f"# CHAMPS\n\n## Evaluation\n\n{evaluation}\n")
    return root


def test_the_groups_are_the_column_the_descriptions_words_end_with(tmp_path):
    inferred = infer_task(champs_folder(tmp_path / "champs"))
    spec = inferred.spec
    assert (spec.metric, spec.metric_params, spec.target_columns) == (
        "group_log_mae",
        {"group_column": "type"},
        ["scalar_coupling_constant"],
    )
    assert any("the groups in 'type'" in note for note in inferred.notes)
    assert spec.group_column is None and spec.ids_unique  # strata to average over, not a ranking


def test_groups_no_column_names_are_refused_and_a_log_mae_of_all_rows_too(tmp_path):
    per_molecule = EVALUATION.replace("scalar coupling type", "chemical element")
    with pytest.raises(TaskError, match="scores each 'chemical element' apart") as refused:
        infer_task(champs_folder(tmp_path / "a", per_molecule))
    assert "metric_params: {group_column: COLUMN}" in refused.value.fix
    with pytest.raises(TaskError, match="log of the MAE"):  # no groups named: a metric mlguild lacks
        infer_task(champs_folder(tmp_path / "b", "Scored by the log of the mean absolute error."))


@pytest.mark.slow
def test_a_run_scores_the_holdout_and_grades_the_test_set_by_the_groups(tmp_path):
    folder = champs_folder(tmp_path / "champs")
    sets = ["brain.name=recipes", "budget.iterations=1", "final.reference_models=false", "memory.enabled=false"]
    done = start(folder, load_config(None, sets), runs_dir=tmp_path / "runs")
    assert isinstance(done, Finished) and done.best is not None
    run = done.run.path
    sealed = pd.read_csv(run / "sealed" / "holdout_answers.csv", dtype={"id": str})
    assert list(sealed.columns) == ["id", "scalar_coupling_constant", "type"]
    best = done.best
    node = done.run.node_dir(best.id)
    assert "objective='l1'" in (node / "solution.py").read_text()  # an absolute error is minimised
    held = pd.read_csv(node / "output" / "holdout.csv", dtype={"id": str}).set_index("id").loc[sealed["id"]]
    metric = get_metric("group_log_mae")
    by_hand = metric(sealed["scalar_coupling_constant"], held["scalar_coupling_constant"], groups=sealed["type"])
    (finished,) = [r for r in done.run.journal.records if r["type"] == "node_finished" and r["id"] == best.id]
    assert finished["holdout_score"] == pytest.approx(by_hand)
    assert finished["oof_score"] is not None  # the out-of-fold rows scored by their types too, and pooled

    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    test = pd.read_csv(folder / "prepared" / "public" / "test.csv", dtype={"id": str})
    answers = pd.read_csv(folder / "prepared" / "private" / "answers.csv", dtype={"id": str})
    graded = next(p for p in (run / "final" / "submission.csv", run / "best" / "submission.csv") if p.exists())
    submitted = pd.read_csv(graded, dtype={"id": str}).set_index("id").loc[answers["id"]]
    types = test.set_index("id").loc[answers["id"], "type"]  # the answers lack it: the test file has it
    expected = metric(answers["scalar_coupling_constant"], submitted["scalar_coupling_constant"], groups=types)
    assert grade["test_score"] == pytest.approx(expected)
    # a constant per type scores far worse: the model learnt the per-type scale
    medians = types.map(
        pd.read_csv(folder / "prepared" / "public" / "train.csv").groupby("type")["scalar_coupling_constant"].median()
    )
    assert grade["test_score"] < metric(answers["scalar_coupling_constant"], medians, groups=types) - 1
