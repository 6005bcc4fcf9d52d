"""Conventions of the competition platforms besides Kaggle's exact file names: Zindi's
capitalised Train.csv, Test.csv and SampleSubmission.csv and its "Area Under the Curve", a
sample named submission.csv beside training.csv and testing.csv, and a test file that keeps the
target's column, empty."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task
from mlguild.task.folder import load_task


def _folder(root, names: tuple[str, str, str], target: str, evaluation: str, blank_target: bool = False):
    """A binary task in ``root`` with the train, test and sample files called ``names``."""
    rng = np.random.default_rng(0)
    root.mkdir(parents=True)
    frame = pd.DataFrame({"ID": [f"id_{i}" for i in range(160)], "age": rng.integers(18, 80, 160)})
    frame["city"] = rng.choice(["a", "b", "c"], 160)
    train, test = frame.iloc[:120].copy(), frame.iloc[120:].copy()
    train[target] = rng.choice(["yes", "no"], 120)
    if blank_target:
        test[target] = ""
    train.to_csv(root / names[0], index=False)
    test.to_csv(root / names[1], index=False)
    test[["ID"]].assign(**{target: 0}).to_csv(root / names[2], index=False)
    (root / "description.md").write_text(f"# A challenge\n\n## Evaluation\n\n{evaluation}\n")
    return root


def test_zindis_capitalised_files_and_area_under_the_curve(tmp_path):
    names = ("Train.csv", "Test.csv", "SampleSubmission.csv")
    evaluation = "The evaluation metric for this challenge is Area Under the Curve."
    spec = infer_task(_folder(tmp_path / "zindi", names, "target", evaluation)).spec
    assert (spec.train_file, spec.test_file, spec.sample_submission) == names
    assert (spec.metric, spec.id_column, spec.target_columns) == ("roc_auc", "ID", ["target"])
    # the precision-recall curve's area is another metric: not taken for ROC AUC
    other = infer_task(_folder(tmp_path / "pr", names, "target", "Scored by the area under the precision-recall curve."),
                       metric="accuracy")  # fmt: skip
    assert other.spec.metric == "accuracy"


def test_a_sample_named_submission_beside_training_and_testing_files(tmp_path):
    names = ("training.csv", "testing.csv", "submission.csv")
    spec = infer_task(_folder(tmp_path / "plain", names, "churn", "Submissions are evaluated on accuracy.")).spec
    assert (spec.train_file, spec.test_file, spec.sample_submission) == names
    assert (spec.metric, spec.target_columns, spec.task_type) == ("accuracy", ["churn"], "binary")


def test_a_test_file_keeping_the_targets_column_empty_is_converted_without_it(tmp_path):
    names = ("train.csv", "test.csv", "sample_submission.csv")
    folder = _folder(tmp_path / "blank", names, "churn", "Submissions are evaluated on accuracy.", blank_target=True)
    inferred = infer_task(folder)
    assert inferred.blank == ("churn",) and inferred.converted
    assert any("holds train.csv's column(s) ['churn'], empty: left out of it" in note for note in inferred.notes)
    assert inferred.spec.target_columns == ["churn"]
    task = load_task(folder_task(folder, None, None, write=False).root)  # the converted folder loads: no leak
    assert "churn" not in pd.read_csv(task.test_path, nrows=0).columns
    assert "churn" in pd.read_csv(folder / "test.csv", nrows=0).columns  # the user's own file is left as it is


def test_drivendatas_inputs_and_labels_in_two_train_files_are_joined_and_the_labels_file_left_out(tmp_path):
    rng = np.random.default_rng(1)
    root = tmp_path / "richter"
    root.mkdir()
    values = pd.DataFrame({"building_id": range(300), "age": rng.integers(0, 90, 300)})
    values["roof"] = rng.choice(["n", "q", "x"], 300)
    labels = pd.DataFrame({"building_id": values["building_id"][::-1], "damage_grade": rng.integers(1, 4, 300)})
    values.iloc[:240].to_csv(root / "train_values.csv", index=False)
    labels[labels["building_id"] < 240].to_csv(root / "train_labels.csv", index=False)  # in another order
    values.iloc[240:].to_csv(root / "test_values.csv", index=False)
    values.iloc[240:][["building_id"]].assign(damage_grade=1).to_csv(root / "submission_format.csv", index=False)
    (root / "description.md").write_text("# Richter\n\n## Evaluation\n\nScored by the micro averaged F1 score.\n")
    inferred = infer_task(root)
    spec = inferred.spec
    assert (spec.train_file, spec.test_file, spec.sample_submission) == (
        "train_values.csv",
        "test_values.csv",
        "submission_format.csv",
    )
    assert (spec.id_column, spec.target_columns, spec.task_type, spec.metric) == (
        "building_id",
        ["damage_grade"],
        "multiclass",
        "accuracy",  # a micro F1 over one label a row
    )
    assert inferred.labels_file == "train_labels.csv" and inferred.converted
    task = load_task(folder_task(root, None, None, write=False).root)
    train = pd.read_csv(task.train_path)
    assert list(train.columns) == ["building_id", "age", "roof", "damage_grade"] and len(train) == 240
    expected = labels.set_index("building_id")["damage_grade"]
    assert (train.set_index("building_id")["damage_grade"] == expected.loc[train["building_id"]]).all()
    assert not (task.public_dir / "train_labels.csv").exists()  # the labels' own file would show the holdout's


def test_a_forecast_whose_train_file_has_no_id_gets_row_ids_and_is_scored_by_smape(tmp_path):
    """Rossmann's and the store-item forecasts' layout: test.csv and the sample have an id, the
    train rows none; the description's metric is SMAPE."""
    root = tmp_path / "demand"
    root.mkdir()
    days = pd.date_range("2017-01-01", periods=60).strftime("%Y-%m-%d")
    rows = [(d, s, i) for d in days for s in (1, 2) for i in (1, 2, 3)]
    frame = pd.DataFrame(rows, columns=["date", "store", "item"])
    frame["sales"] = np.random.default_rng(2).integers(0, 50, len(frame))
    train, test = frame.iloc[:300], frame.iloc[300:].drop(columns="sales")
    train.to_csv(root / "train.csv", index=False)
    test.assign(id=range(len(test)))[["id", "date", "store", "item"]].to_csv(root / "test.csv", index=False)
    pd.DataFrame({"id": range(len(test)), "sales": 0}).to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text(
        "## Evaluation\n\nSubmissions are evaluated on SMAPE between forecasts and actual values.\n"
    )
    inferred = infer_task(root)
    assert (inferred.spec.metric, inferred.spec.id_column, inferred.spec.time_column) == ("smape", "id", "date")
    assert inferred.numbered and any("has no column 'id'" in note for note in inferred.notes)
    task = load_task(folder_task(root, None, None, write=False).root)
    written = pd.read_csv(task.train_path, dtype=str)
    assert list(written.columns) == ["id", "date", "store", "item", "sales"]
    assert written["id"].is_unique and written["id"].iloc[0] == "train-0"
    assert "id" not in pd.read_csv(root / "train.csv", nrows=0).columns  # the user's file is left as it is


def test_smape_is_kaggles_and_a_plain_mape_is_refused(tmp_path):
    from mlguild.core.errors import TaskError
    from mlguild.metrics import get_metric

    smape = get_metric("smape")
    assert smape([100, 0, 50], [110, 0, 40]) == pytest.approx(100 / 3 * (20 / 210 + 0 + 20 / 90))
    assert smape([0, 0], [0, 0]) == 0.0 and smape([1], [-1]) == pytest.approx(200.0)
    names = ("train.csv", "test.csv", "sample_submission.csv")
    with pytest.raises(TaskError, match="mean absolute percentage error"):
        infer_task(_folder(tmp_path / "mape", names, "target", "Scored by the mean absolute percentage error (MAPE)."))


def test_a_folder_of_semicolon_separated_tables_is_converted_into_commas(tmp_path):
    """A spreadsheet's export where the decimal mark is a comma: fields separated by ';'."""
    root = tmp_path / "export"
    root.mkdir()
    lines = [f"{i};{i % 7},{i % 10};{'ab'[i % 2]};{i % 2}" for i in range(120)]
    (root / "train.csv").write_text("id;weight;kind;label\n" + "\n".join(lines) + "\n")
    (root / "test.csv").write_text("id;weight;kind\n" + "".join(f"{i};1,5;a\n" for i in range(500, 540)))
    (root / "sample_submission.csv").write_text("id;label\n" + "".join(f"{i};0,5\n" for i in range(500, 540)))
    (root / "description.md").write_text("## Evaluation\n\nScored by the area under the ROC curve.\n")
    inferred = infer_task(root)
    assert (inferred.spec.target_columns, inferred.spec.metric) == (["label"], "roc_auc")
    assert set(inferred.retyped) == {"train.csv", "test.csv", "sample_submission.csv"}
    task = load_task(folder_task(root, None, None, write=False).root)
    train = pd.read_csv(task.train_path, dtype=str)
    assert list(train.columns) == ["id", "weight", "kind", "label"] and train["weight"].iloc[8] == "1,8"
