"""A competition folder with no train table, whose train files are labelled by the folder each is
in (``train/<label>/<file>``, plant-seedlings-classification's and tensorflow-speech's layout) or
by a token of their names (dogs-vs-cats' ``train/cat.0.jpg``), and whose sample submission's
ids name the test files: the train table is derived, the files renamed in the converted task
folder so that neither a folder nor a name tells a label, and the user's folder left as it was."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from test_sample_test_rows import cactus_folder, listing

from mlguild.core.errors import TaskError
from mlguild.sources.infer import infer_task
from mlguild.sources.labelled_files import TRAIN_FILES_FROM
from mlguild.sources.resolve import folder_task


def test_train_files_in_folders_named_by_their_labels_make_the_train_table(tmp_path):
    folder = cactus_folder(tmp_path / "seedlings", n_train=12, by_label=True, table=False)
    mine = folder / "prepared" / "public" / "test.csv"  # a file of the user's that the task's test table replaces
    mine.write_text("note\nthe user's own\n")
    before = listing(folder)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.metric, spec.task_type) == (
        "id",
        ["has_cactus"],
        "roc_auc",
        "binary",
    )
    assert (spec.file_column, spec.train_files, spec.test_files, spec.file_suffix) == ("id", "train", "test", "")
    assert any("labelled by the folder each is in (2 labels)" in note for note in inferred.notes)

    task = folder_task(folder, None, None)
    assert listing(folder) == before  # nothing written in the user's folder
    assert mine.read_text() == "note\nthe user's own\n"  # its link was replaced, not written through
    train = pd.read_csv(task.train_path, dtype=str)
    assert list(train.columns) == ["id", "has_cactus"] and len(train) == 12
    assert sorted(train["has_cactus"]) == ["0"] * 6 + ["1"] * 6
    assert list(train["has_cactus"]) != sorted(train["has_cactus"])  # numbered in no label order
    # the train folder holds the renamed files alone: no label folder, no original name
    assert sorted(p.name for p in (task.public_dir / "train").iterdir()) == sorted(train["id"])
    origin = pd.read_csv(task.root / TRAIN_FILES_FROM, dtype=str)  # beside public/, where scripts never look
    public = folder / "prepared" / "public"
    for row in origin.merge(train, on="id").itertuples():
        assert row.file.startswith(f"train/{row.has_cactus}/")  # each id is the file of its own label
        assert os.path.samefile(task.public_dir / "train" / row.id, public / row.file)  # linked, not copied
    assert (task.public_dir / "test" / f"{12:032x}.png").is_file()  # the test files as they were


def test_a_label_in_each_train_file_name_makes_the_train_table(tmp_path):
    public = tmp_path / "dogs" / "public"
    (public / "train").mkdir(parents=True)
    (public / "test").mkdir()
    for n in range(10):
        (public / "train" / f"{'cat' if n % 2 else 'dog'}.{n}.jpg").write_bytes(b"")
    for n in range(1, 5):
        (public / "test" / f"{n}.jpg").write_bytes(b"")
    (public / "sample_submission.csv").write_text("id,label\n" + "".join(f"{n},0.5\n" for n in range(1, 5)))
    (public / "description.md").write_text(
        "# dogs\n\n## Evaluation\n\nScored on the log loss; y_hat is the predicted probability of the image being a dog.\n"
    )
    inferred = infer_task(tmp_path / "dogs")
    spec = inferred.spec
    assert (spec.target_columns, spec.metric, spec.positive_label, spec.file_suffix) == (
        ["label"],
        "binary_logloss",
        "dog",
        ".jpg",
    )
    assert any("labelled by the first part of each file's name" in note for note in inferred.notes)
    task = folder_task(tmp_path / "dogs", None, None)
    names = sorted(p.name for p in (task.public_dir / "train").iterdir())
    assert len(names) == 10 and not any("cat" in n or "dog" in n for n in names)  # no name tells its label
    assert sorted(pd.read_csv(task.test_path, dtype=str)["id"]) == ["1", "2", "3", "4"]


def test_file_names_whose_label_cannot_be_told_are_refused(tmp_path):
    public = tmp_path / "comp" / "public"
    (public / "train").mkdir(parents=True)
    (public / "test").mkdir()
    for n in range(12):  # first and last parts each take two values: which is the label is not guessed
        (public / "train" / f"{'a' if n % 2 else 'b'}_{n}_{'x' if n % 3 else 'y'}.png").write_bytes(b"")
    for n in range(3):
        (public / "test" / f"t{n}.png").write_bytes(b"")
    (public / "sample_submission.csv").write_text("id,label\n" + "".join(f"t{n}.png,a\n" for n in range(3)))
    (public / "description.md").write_text("# comp\n\n## Evaluation\n\nClassification accuracy.\n")
    with pytest.raises(TaskError, match="cannot tell which file is the train file"):
        infer_task(tmp_path / "comp")
    (public / "train.zip").write_bytes(b"")  # archives beside: the fix says to unpack them first
    with pytest.raises(TaskError) as refused:
        infer_task(tmp_path / "comp")
    assert "unpack the archives that may hold the files (train.zip)" in refused.value.fix
