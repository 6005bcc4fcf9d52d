"""Rows whose input is an array file: a CSV of sensor columns per row, named by the row's id
(predict-volcanic-eruptions-ingv-oe's train/1000213997.csv), or a NumPy array in subfolders
named by the id's first character (seti-breakthrough-listen's train/0/0a1b2c.npy). Inference
reads such CSVs as the rows' data, not tables; the converted folder lays sharded files flat;
the array recipes summarise each channel and run to a graded submission."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task


def segments_folder(root, n_train: int = 60, n_test: int = 20):
    """Volcanic-style: train.csv (segment_id, time_to_eruption), a CSV of three sensors per row in
    train/ and test/, the sample submission listing the test rows; the answers in private/."""
    rng = np.random.default_rng(0)
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    for folder in (public / "train", public / "test", private):
        folder.mkdir(parents=True)
    rows = []
    for k in range(n_train + n_test):
        segment, level = 1000 + k, rng.uniform(0, 10)
        signal = rng.normal(0, 1 + level, size=(50, 3))  # louder the closer the eruption
        folder = public / ("test" if k >= n_train else "train")
        pd.DataFrame(signal.round(3), columns=["sensor_1", "sensor_2", "sensor_3"]).to_csv(
            folder / f"{segment}.csv", index=False
        )
        rows.append({"segment_id": str(segment), "time_to_eruption": round(100 - 9 * level, 2)})
    frame = pd.DataFrame(rows)
    frame[:n_train].to_csv(public / "train.csv", index=False)
    frame[n_train:].assign(time_to_eruption=0).to_csv(public / "sample_submission.csv", index=False)
    frame[n_train:].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text("# volcano\n\n## Evaluation\n\nEvaluated on the mean absolute error.\n")
    return root, frame


def sharded_folder(root, n_train: int = 60, n_test: int = 20, ordered: bool = False):
    """SETI-style: train_labels.csv (id, target), each row's .npy array in train/<id[0]>/ and
    test/<id[0]>/, the sample submission listing the test rows; the answers in private/."""
    rng = np.random.default_rng(1)
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    private.mkdir(parents=True)
    rows = []
    for k in range(n_train + n_test):
        image_id, target = f"{rng.integers(16**11):011x}", k % 2
        if ordered and k < 25:  # sorted, the first 20 train ids all lie in train/0/
            image_id = f"0{image_id[1:]}"
        array = rng.normal(size=(2, 8, 8)) + (1.5 if target else 0) * (np.arange(8) == 3)  # a line when 1
        where = public / ("test" if k >= n_train else "train") / image_id[0]
        where.mkdir(parents=True, exist_ok=True)
        np.save(where / f"{image_id}.npy", array.astype(np.float32))
        rows.append({"id": image_id, "target": str(target)})
    frame = pd.DataFrame(rows)
    if ordered:  # sorted by id, as seti's are: the first rows' ids share their first character
        frame = pd.concat([frame[:n_train].sort_values("id"), frame[n_train:].sort_values("id")], ignore_index=True)
    frame[:n_train].to_csv(public / "train_labels.csv", index=False)
    frame[n_train:].assign(target=0.5).to_csv(public / "sample_submission.csv", index=False)
    frame[n_train:].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text("# seti\n\nSubmissions are evaluated on area under the ROC curve.\n")
    return root, frame


def test_csvs_of_each_rows_data_are_no_tables_and_sharded_files_are_laid_flat(tmp_path):
    folder, _ = segments_folder(tmp_path / "volcano", n_train=12, n_test=10)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.train_file, spec.test_file, spec.file_column) == ("train.csv", "test.csv", "segment_id")
    assert (spec.train_files, spec.test_files, spec.file_suffix, spec.modality) == (
        "train",
        "test",
        ".csv",
        "array_files",
    )
    assert any("CSV files in test, train/: each row's own data" in note for note in inferred.notes)

    for ordered in (False, True):
        folder, frame = sharded_folder(tmp_path / f"seti-{ordered}", n_train=40, n_test=4, ordered=ordered)
        inferred = infer_task(folder)
        assert inferred.shards == {"train": 1, "test": 1} and inferred.spec.modality == "array_files"
        assert (inferred.spec.train_files, inferred.spec.test_files) == ("train", "test")
        task = folder_task(folder, None, None)
        names = sorted(p.name for p in (task.public_dir / "train").iterdir())
        assert names == sorted(f"{i}.npy" for i in frame["id"][:40])  # flat: no folder of first characters left
        tests = sorted(p.name for p in (task.public_dir / "test").iterdir())
        assert tests == sorted(f"{i}.npy" for i in frame["id"][40:])


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["segments", "sharded"])
def test_an_array_files_task_runs_to_a_graded_submission_that_uses_the_arrays(tmp_path, layout):
    build = segments_folder if layout == "segments" else sharded_folder
    folder, frame = build(tmp_path / layout)
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    assert grade["valid"]
    if layout == "segments":  # far better than the mean's MAE, which knows nothing of the sensors
        answers = frame["time_to_eruption"].to_numpy()
        constant = float(np.abs(answers[60:] - answers[:60].mean()).mean())
        assert grade["metric"] == "mae" and grade["test_score"] < 0.6 * constant
    else:
        assert grade["metric"] == "roc_auc" and grade["test_score"] > 0.8  # the planted line is found
