"""A competition folder whose test rows are listed only by the sample submission (train.csv with
id and label, train/ and test/ images, sample_submission.csv, no test.csv: ranzcr-clip,
histopathologic-cancer-detection, dog-breed-identification, ... as MLE-bench prepares them) is
converted into a task folder of mlguild's own, with the test table derived from the sample's
ids; the user's folder is left as it was, and the task runs end to end."""

from __future__ import annotations

import json
import os
import shutil
import zipfile

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild
from PIL import Image

from mlguild.config import mlguild_home
from mlguild.core.errors import TaskError
from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task


def cactus_folder(
    root,
    n_train: int = 8,
    n_test: int = 4,
    images: bool = False,
    by_label: bool = False,
    ranked: bool = False,
    table: bool = True,
):
    """aerial-cactus-identification's public layout, its image folders unpacked (MLE-bench leaves
    them as train.zip and test.zip): ids are the file names, in train/ and test/;
    with ``images`` real grey pictures (bright ones are label 1), else empty files; ``by_label``
    puts each train image in a folder named by its label (train/1/...), as paddy-disease-
    classification's are; ``ranked`` asks for ranked guesses scored by MAP@5, as whale-
    categorization-playground and hotel-id-2021-fgvc8 do; without ``table`` no train.csv: the
    folders' names are the labels (plant-seedlings-classification's layout)."""
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    for folder in (public / "train", public / "test", private):
        folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows = []
    for k in range(n_train + n_test):
        name, label = f"{k:032x}.png", k % 2
        named = f"w_{label}" if ranked else str(label)
        folder = public / ("test" if k >= n_train else f"train/{named}" if by_label else "train")
        folder.mkdir(exist_ok=True)
        if images:
            pixels = rng.normal(170 if label else 80, 25, size=(16, 16)).clip(0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / name)
        else:
            (folder / name).write_bytes(b"")
        rows.append({"id": name, "has_cactus": f"w_{label}" if ranked else str(label)})
    frame = pd.DataFrame(rows)
    if table:
        frame[:n_train].to_csv(public / "train.csv", index=False)
    frame[n_train:].assign(has_cactus="w_0 w_1" if ranked else "0.5").to_csv(
        public / "sample_submission.csv", index=False
    )
    frame[n_train:].to_csv(private / "test.csv", index=False)
    metric = "Mean Average Precision @ 5 (MAP@5)" if ranked else "area under the ROC curve"
    (public / "description.md").write_text(
        f"# Aerial cactus\n\n## Evaluation\n\nSubmissions are evaluated on {metric}.\n"
    )
    return root


def pack_folder(public, name: str, nested: bool = False, suffix: str = ".zip") -> None:
    """Zip ``public/name`` as mlebench.utils.compress does (names inside the folder), or with the
    folder's name (``nested``, as shutil.make_archive), and remove the folder; ``suffix`` .7z
    packs it with py7zr, as invasive-species-monitoring's prepare.py does."""
    files = {
        f: f.relative_to(public if nested else public / name).as_posix()
        for f in sorted((public / name).rglob("*"))
        if f.is_file()
    }
    if suffix == ".7z":
        import py7zr

        with py7zr.SevenZipFile(public / f"{name}.7z", "w") as packed:
            for file, arcname in files.items():
                packed.write(file, arcname=arcname)
    else:
        with zipfile.ZipFile(public / f"{name}{suffix}", "w") as packed:
            for file, arcname in files.items():
                packed.write(file, arcname=arcname)
    shutil.rmtree(public / name)


def listing(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_the_test_rows_come_from_the_sample_and_the_folder_is_converted_not_written(tmp_path):
    folder = cactus_folder(tmp_path / "aerial-cactus-identification")
    (folder / "leaderboard.csv").write_text("scoreNullable,teamId\n1.0,1\n")  # beside prepared/, as MLE-bench has it
    before = listing(folder)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.metric) == ("id", ["has_cactus"], "roc_auc")
    assert (spec.file_column, spec.train_files, spec.test_files, spec.test_file) == ("id", "train", "test", "test.csv")
    assert list(inferred.test_rows["id"]) == [f"{k:032x}.png" for k in range(8, 12)]

    said: list[str] = []
    task = folder_task(folder, None, None, say=said.append)
    assert listing(folder) == before  # not even a task.yaml in the user's folder
    assert task.root.parent == mlguild_home() / "tasks" and task.root.name.startswith("aerial-cactus-identification-")
    assert "no CSV of test rows" in " ".join(said)
    assert pd.read_csv(task.test_path, dtype=str)["id"].tolist() == list(inferred.test_rows["id"])
    public = folder / "prepared" / "public"
    for rel in ("train.csv", "sample_submission.csv", "test/0000000000000000000000000000000a.png"):
        assert os.path.samefile(task.public_dir / rel, public / rel)  # linked, not copied
    assert task.answers_path is not None and task.answers_path.name == "test.csv"  # the private answers too
    assert (task.root / "leaderboard.csv").is_file()  # where `mlguild grade` finds the medals' thresholds
    (task.root / "knowledge").mkdir()
    (task.root / "knowledge" / "note.md").write_text("an item `mlguild knowledge add` wrote")
    again = folder_task(folder, None, None)  # run again: the same folder, rebuilt, its knowledge kept
    assert again.root == task.root and (again.root / "knowledge" / "note.md").is_file()
    assert os.path.samefile(again.public_dir / "train.csv", public / "train.csv")


def test_a_sample_whose_ids_name_no_files_is_still_refused(tmp_path):
    folder = cactus_folder(tmp_path / "comp")
    for image in (folder / "prepared" / "public" / "test").iterdir():
        image.unlink()
    with pytest.raises(TaskError, match=r"no CSV of test rows .* ids name no files in a test folder") as refused:
        infer_task(folder)
    assert "write a test.csv" in refused.value.fix
    (folder / "prepared" / "public" / "test.zip").write_bytes(b"")  # MLE-bench zips some image folders
    with pytest.raises(TaskError) as refused:
        infer_task(folder)
    assert "unpack the archives that may hold the files (test.zip)" in refused.value.fix


def test_train_files_in_folders_named_by_their_labels_are_laid_flat(tmp_path):
    folder = cactus_folder(tmp_path / "paddy", by_label=True)
    inferred = infer_task(folder)
    assert (inferred.spec.file_column, inferred.spec.train_files, inferred.nested) == ("id", "train", "has_cactus")
    task = folder_task(folder, None, None)
    train = pd.read_csv(task.train_path, dtype=str)
    assert sorted(p.name for p in (task.public_dir / "train").iterdir()) == sorted(train["id"])  # no label folder
    assert (folder / "prepared" / "public" / "train" / "1" / f"{1:032x}.png").is_file()  # the user's, as it was


@pytest.mark.slow
@pytest.mark.parametrize(
    ("by_label", "table"),
    # folders named by label (ranked guesses), then with no train table and the folders zipped
    [(False, True), (True, True), (True, False)],
)
def test_an_image_folder_without_a_test_file_runs_to_a_graded_submission(tmp_path, by_label, table):
    ranked = by_label and table
    folder = cactus_folder(
        tmp_path / "cactus", n_train=80, n_test=24, images=True, by_label=by_label, ranked=ranked, table=table
    )
    if not table:  # and the image folders zipped, as MLE-bench leaves aerial-cactus-identification's
        pack_folder(folder / "prepared" / "public", "train")
        pack_folder(folder / "prepared" / "public", "test")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "r"
    submission = pd.read_csv(run / "final" / "submission.csv", dtype=str)
    sample = pd.read_csv(folder / "prepared" / "public" / "sample_submission.csv", dtype=str)
    assert list(submission.columns) == ["id", "has_cactus"] and sorted(submission["id"]) == sorted(sample["id"])
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["test_score"] > 0.8  # bright against dark: far above the 0.5 of guessing
    assert grade["metric"] == ("map_at_k" if ranked else "roc_auc")
    assert not (folder / "prepared" / "task.yaml").exists()
