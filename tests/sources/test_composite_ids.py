"""A folder whose test rows are listed only by the sample submission's ids, each id made of the
train file's columns joined by ``_`` (nfl-player-contact-detection: ``contact_id`` is
``game_play``, ``step``, ``nfl_player_id_1`` and ``nfl_player_id_2``; ``train_labels.csv``
beside ``train_player_tracking.csv`` and ``test_player_tracking.csv``, no CSV of test rows):
the train file is the one holding the sample's columns, the test table is the sample's ids
split as the train file's are, and the run ends in a valid, graded submission."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

from mlguild.core.errors import TaskError
from mlguild.sources.composite_ids import id_parts, split_ids
from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task


def _contacts(rng, plays: range, n: int) -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "game_play": [f"58168_{p:06d}" for p in rng.choice(list(plays), n)],
            "step": rng.integers(0, 60, n),
            "nfl_player_id_1": rng.integers(30000, 50000, n),
        }
    )
    ground = rng.random(n) < 0.3
    rows["nfl_player_id_2"] = np.where(ground, "G", rng.integers(30000, 50000, n).astype(str))
    parts = ["game_play", "step", "nfl_player_id_1", "nfl_player_id_2"]
    rows.insert(0, "contact_id", rows[parts].astype(str).agg("_".join, axis=1))
    rows["contact"] = ((rows["nfl_player_id_2"] == "G") & (rows["step"] > 20)).astype(int)
    return rows.drop_duplicates("contact_id").reset_index(drop=True)


def contacts_folder(root, n_train: int = 240, n_test: int = 80):
    """nfl-player-contact-detection's public files as its prepare.py writes them, and MLE-bench's
    answers (contact_id, contact)."""
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    rng = np.random.default_rng(0)
    train, test = _contacts(rng, range(0, 8), n_train), _contacts(rng, range(100, 104), n_test)
    train.assign(datetime="2020-09-11").to_csv(public / "train_labels.csv", index=False)
    test[["contact_id"]].assign(contact=0).to_csv(public / "sample_submission.csv", index=False)
    test[["contact_id", "contact"]].to_csv(private / "answers.csv", index=False)
    for name, frame in (("train", train), ("test", test)):
        tracking = frame[["game_play", "step", "nfl_player_id_1"]].rename(columns={"nfl_player_id_1": "nfl_player_id"})
        tracking.assign(x_position=rng.uniform(0, 120, len(tracking))).to_csv(
            public / f"{name}_player_tracking.csv", index=False
        )
    (public / "description.md").write_text(
        "# Contacts\n\n## Evaluation\n\nSubmissions are evaluated on Matthews Correlation Coefficient between "
        "the predicted and actual contact events.\n"
    )
    return root


def test_the_test_rows_are_the_sample_ids_split_as_the_train_ids_are_made(tmp_path):
    folder = contacts_folder(tmp_path / "nfl-player-contact-detection")
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.metric, spec.train_file) == (
        "contact_id", ["contact"], "mcc", "train_labels.csv",
    )  # fmt: skip
    notes = " | ".join(inferred.notes)
    assert (
        "train file train_labels.csv: of the files named so, the one holding sample_submission.csv's columns" in notes
    )
    assert "['game_play', 'step', 'nfl_player_id_1', 'nfl_player_id_2'] joined by '_'" in notes
    task = folder_task(folder, None, None)
    test = pd.read_csv(task.test_path, dtype=str)
    assert list(test.columns) == ["contact_id", "game_play", "step", "nfl_player_id_1", "nfl_player_id_2"]
    sample = pd.read_csv(folder / "prepared" / "public" / "sample_submission.csv", dtype=str)
    assert test["contact_id"].tolist() == sample["contact_id"].tolist()
    assert (
        test[["game_play", "step", "nfl_player_id_1", "nfl_player_id_2"]].agg("_".join, axis=1) == test["contact_id"]
    ).all()
    assert test["game_play"].str.count("_").eq(1).all()  # a column of two parts stays whole
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before  # the user's folder untouched


def test_ids_made_no_one_way_are_not_split():
    rows = pd.DataFrame({"id": ["a_1", "b_2"], "x": ["a", "b"], "y": ["1", "2"]})
    assert id_parts(rows, "id") == (("x", 1), ("y", 1))
    assert id_parts(rows.assign(z=rows["x"]), "id") is None  # x or its copy z: which one is not guessed
    assert id_parts(rows.assign(id=["a_1", "b_3"]), "id") is None  # a row not made so
    assert id_parts(rows.assign(id=["a", "b"]), "id") is None  # one column is a copy, not a composite id
    wide = pd.DataFrame({"id": ["a_b_1", "c_2"], "x": ["a_b", "c"], "y": ["1", "2"]})
    assert id_parts(wide, "id") is None  # x's values take one part or two: no split is sure
    assert split_ids(pd.Series(["c_3", "d_4_5"]), (("x", 1), ("y", 1))) is None  # an id of three parts


def test_a_test_file_holding_the_ids_parts_is_not_replaced_by_the_samples_ids(tmp_path):
    # Its rows and inputs are the test rows: split ids would drop its inputs. An id of more than
    # two parts over a test file stays refused (submission_ids joins one column or two).
    folder = contacts_folder(tmp_path / "contacts")
    public = folder / "prepared" / "public"
    labels = pd.read_csv(public / "train_labels.csv", dtype=str)
    sample = pd.read_csv(public / "sample_submission.csv", dtype=str)
    parts = ["game_play", "step", "nfl_player_id_1", "nfl_player_id_2"]
    test = sample["contact_id"].str.split("_", expand=True)
    test = pd.DataFrame({"game_play": test[0] + "_" + test[1], "step": test[2], "nfl_player_id_1": test[3]})
    test.assign(nfl_player_id_2=sample["contact_id"].str.split("_").str[4], datetime="2021-09-11").to_csv(
        public / "test_labels.csv", index=False
    )
    assert list(labels.columns[1:5]) == parts
    with pytest.raises(TaskError, match=r"first column 'contact_id' is not a column of test_labels\.csv"):
        infer_task(folder)


def test_a_sample_whose_ids_split_otherwise_is_still_refused(tmp_path):
    folder = contacts_folder(tmp_path / "contacts")
    public = folder / "prepared" / "public"
    sample = pd.read_csv(public / "sample_submission.csv", dtype=str)
    sample.assign(contact_id=[f"{i}_x" for i in range(len(sample))]).to_csv(
        public / "sample_submission.csv", index=False
    )
    with pytest.raises(TaskError, match="no CSV of test rows"):
        infer_task(folder)


@pytest.mark.slow
def test_a_folder_of_composite_ids_runs_to_a_graded_submission(tmp_path):
    folder = contacts_folder(tmp_path / "contacts")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["metric"] == "mcc" and grade["test_score"] > 0.5
