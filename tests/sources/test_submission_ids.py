"""A sample submission whose id column is the test file's id under another name (iwildcam-2019:
``Id`` for ``id``, its prediction ``Category`` for the target ``category_id``, the sample written
with its pandas index), or two test columns joined by ``_`` (the text normalization challenges:
``id`` = ``sentence_id``_``token_id``): inferred only when the made ids equal the sample's row by
row, converted into a task folder of mlguild's own with the id column in its train and test
files, the user's folder untouched, and run end to end. And a sample that puts its prediction
first and repeats the test rows after it (detecting-insults: ``Insult, Date, Comment``, graded
by joining on ``Comment``): keyed by the one repeated column of unique text."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

from mlguild.core.errors import TaskError
from mlguild.scoring.scorer import Scorer
from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task


def renamed_folder(root, n_train: int = 60, n_test: int = 20):
    """iwildcam-2019-fgvc6's public files, as its prepare.py writes them."""
    public = root / "prepared" / "public"
    public.mkdir(parents=True)
    rng = np.random.default_rng(0)
    n = n_train + n_test
    frame = pd.DataFrame({"id": [f"{i:032x}" for i in range(n)], "location": rng.integers(0, 9, n)})
    frame["frame_num"] = rng.integers(1, 4, n)
    frame["category_id"] = np.where(frame["location"] > 4, 19, 0)
    frame[:n_train].to_csv(public / "train.csv", index=False)
    test = frame[n_train:].drop(columns=["category_id"])
    test.to_csv(public / "test.csv", index=False)
    sample = pd.DataFrame({"Id": test["id"].to_numpy(), "Category": 0})
    sample.to_csv(public / "sample_submission.csv", index=True)  # as prepare.py does: ",Id,Category"
    (public / "description.md").write_text(
        "# Cameras\n\n## Evaluation\n\nSubmissions are evaluated on macro F1 score.\n"
    )
    return root


def joined_folder(root, sentences: int = 160, test_sentences: int = 40):
    """The text normalization challenges' files: tokens of sentences, the submission's id made of
    sentence_id and token_id; the test answers as MLE-bench keeps them (id, after)."""
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    words = {"the": "the", ",": ",", "12": "twelve", "2006": "two thousand six", "and": "and"}
    rows = []
    for s in range(sentences):
        for t, before in enumerate(list(words)[s % 2 :]):
            rows.append({"sentence_id": s, "token_id": t, "before": before, "after": words[before]})
    frame = pd.DataFrame(rows)
    train, test = (
        frame[frame.sentence_id < sentences - test_sentences],
        frame[frame.sentence_id >= sentences - test_sentences],
    )
    train.to_csv(public / "en_train.csv", index=False)
    test.drop(columns=["after"]).to_csv(public / "en_test_2.csv", index=False)
    ids = test["sentence_id"].astype(str) + "_" + test["token_id"].astype(str)
    pd.DataFrame({"id": ids, "after": "x"}).to_csv(public / "en_sample_submission_2.csv", index=False)
    pd.DataFrame({"id": ids, "after": test["after"]}).to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(
        "# Words\n\n## Evaluation\n\nSubmissions are evaluated on prediction accuracy.\n"
    )
    return root


def insults_folder(root, n_train: int = 120, n_test: int = 40):
    """detecting-insults-in-social-commentary's public files: no id column; the sample repeats the
    test rows' Date (a unique timestamp a row) and Comment after its prediction; MLE-bench's
    answers keyed by Comment."""
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    rng = np.random.default_rng(0)
    rude, kind = ["idiot", "moron", "loser"], ["thanks", "agree", "nice"]
    rows = []
    for i in range(n_train + n_test):
        insult = int(rng.random() < 0.4)
        words = [*rng.choice(rude if insult else kind, size=2), "comment", str(i)]
        rows.append({"Insult": insult, "Date": f"201206{i:08d}Z", "Comment": " ".join(words)})
    frame = pd.DataFrame(rows)
    frame[:n_train].to_csv(public / "train.csv", index=False)
    test = frame[n_train:]
    test.drop(columns=["Insult"]).to_csv(public / "test.csv", index=False)
    test.assign(Insult=0).to_csv(public / "sample_submission_null.csv", index=False)
    test[["Comment", "Insult"]].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(
        "# Insults\n\n## Evaluation\n\nThe metric is the Area under the ROC curve (AUC).\n"
    )
    return root


def test_a_sample_that_repeats_the_test_rows_after_its_prediction_is_keyed_by_their_text(tmp_path):
    folder = insults_folder(tmp_path / "detecting-insults")
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.submission_columns, spec.metric) == (
        "Comment", ["Insult"], ["Comment", "Insult"], "roc_auc",
    )  # fmt: skip
    assert inferred.sample_columns == ("Comment", "Insult") and inferred.converted
    task = folder_task(folder, None, None)
    assert task.sample_submission_path.read_text().splitlines()[0] == "Comment,Insult"
    # with two text columns of unique values after it, which one keys the rows is not guessed
    public = folder / "prepared" / "public"
    for name in ("train.csv", "test.csv", "sample_submission_null.csv"):
        table = pd.read_csv(public / name, dtype=str)
        table.assign(Author=table["Comment"].str.upper()).to_csv(public / name, index=False)
    with pytest.raises(TaskError, match=r"first column 'Insult' is not a column of test\.csv"):
        infer_task(folder)


def listing(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_an_id_under_another_name_and_a_sample_with_its_index(tmp_path):
    folder = renamed_folder(tmp_path / "iwildcam-2019-fgvc6")
    before = listing(folder)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.submission_columns) == ("Id", ["category_id"], ["Id", "Category"])
    assert (spec.metric, inferred.made_of, inferred.indexed) == ("f1_macro", ("id",), True)
    task = folder_task(folder, None, None)
    assert listing(folder) == before
    train = pd.read_csv(task.train_path, dtype=str)
    assert list(train.columns) == ["Id", "location", "frame_num", "category_id"]  # id renamed, not kept twice
    assert pd.read_csv(task.test_path, dtype=str)["Id"].tolist() == [f"{i:032x}" for i in range(60, 80)]
    assert task.sample_submission_path.read_text().splitlines()[0] == "Id,Category"


def test_an_id_joined_from_two_columns(tmp_path):
    inferred = infer_task(joined_folder(tmp_path / "text-normalization"))
    assert (inferred.spec.id_column, inferred.spec.target_columns, inferred.made_of) == (
        "id",
        ["after"],
        ("sentence_id", "token_id"),
    )
    task = folder_task(tmp_path / "text-normalization", None, None)
    test = pd.read_csv(task.test_path, dtype=str)
    assert list(test.columns) == ["id", "sentence_id", "token_id", "before"]  # the joined columns stay inputs
    assert test["id"].iloc[0] == f"{test['sentence_id'].iloc[0]}_{test['token_id'].iloc[0]}"


def test_ids_made_of_nothing_or_of_either_of_two_columns_are_refused(tmp_path):
    folder = renamed_folder(tmp_path / "comp")
    public = folder / "prepared" / "public"
    sample = pd.read_csv(public / "sample_submission.csv", index_col=0, dtype=str)
    sample.assign(Id=[f"x{i}" for i in range(len(sample))]).to_csv(public / "sample_submission.csv", index=False)
    with pytest.raises(TaskError, match=r"first column 'Id' is not a column of test\.csv"):
        infer_task(folder)
    test = pd.read_csv(public / "test.csv", dtype=str)
    test.assign(copy=test["id"]).to_csv(public / "test.csv", index=False)  # two columns hold the ids
    train = pd.read_csv(public / "train.csv", dtype=str)
    train.assign(copy=train["id"]).to_csv(public / "train.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    with pytest.raises(TaskError, match=r"first column 'Id' is not a column of test\.csv"):
        infer_task(folder)  # which one is the id is not guessed


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["renamed", "joined", "insults"])
def test_a_folder_whose_ids_are_made_runs_to_a_valid_submission(tmp_path, layout):
    made = {"renamed": renamed_folder, "joined": joined_folder, "insults": insults_folder}[layout]
    folder = made(tmp_path / layout)
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "r"
    task = folder_task(folder, None, None)
    sample = pd.read_csv(task.sample_submission_path, dtype=str)
    labels = set(pd.read_csv(task.train_path, dtype=str)[task.spec.target_columns[0]])  # the labels it may predict
    scorer = Scorer(task.spec, expected_ids=sample[task.spec.id_column].tolist(), labels=labels)
    scorer.validate(run / "final" / "submission.csv")
    assert list(pd.read_csv(run / "final" / "submission.csv", nrows=1).columns) == task.spec.submission_columns
    if layout == "joined":  # MLE-bench's answers (id, after) grade it
        grade = json.loads((run / "audit" / "final_grade.json").read_text())
        assert grade["valid"] and grade["metric"] == "accuracy" and grade["test_score"] > 0.5
    if layout == "insults":  # MLE-bench's answers (Comment, Insult) grade it, joined on the Comment
        grade = json.loads((run / "audit" / "final_grade.json").read_text())
        assert grade["valid"] and grade["metric"] == "roc_auc" and 0 <= grade["test_score"] <= 1
        assert "Comment_text" in pd.read_csv(task.train_path, nrows=1).columns  # the text, as an input
