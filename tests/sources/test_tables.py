"""Tables in another form than a plain CSV: tab-separated, and zipped or packed in 7z (one table an archive), as
MLE-bench's prepare.py leaves movie-review-sentiment-analysis-kernels-only's train.tsv.zip and
test.tsv.zip beside a plain sampleSubmission.csv. Read for inference as they are, converted into
CSV files in a task folder of mlguild's own (no TSV left there: a train table beside the split
one would show the holdout's labels), and run end to end."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

from mlguild.core.errors import TaskError
from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task
from mlguild.sources.tables import as_csv, frame, header, json_tables


def reviews_folder(root, n_train: int = 240, n_test: int = 60, zipped: bool = True):
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    rng = np.random.default_rng(2)
    words = {0: ["dull", "bad", "boring"], 1: ["fine", "good", "lovely"]}
    filler = "the a this plot cast scene story actor music end long short old new every one".split()
    rows = []
    for i in range(n_train + n_test):
        label = int(rng.integers(0, 2))
        tokens = [*rng.choice(words[label], 2), *rng.choice(filler, 9 if label else 3)]  # praise runs longer
        phrase = " ".join(rng.permutation(tokens)) + (" film, really" if i % 2 else " film, truly")
        rows.append({"PhraseId": i + 1, "SentenceId": i // 4, "Phrase": phrase, "Sentiment": label})
    data = pd.DataFrame(rows)
    train, test = data[:n_train], data[n_train:]
    for name, table in (("train.tsv", train), ("test.tsv", test.drop(columns=["Sentiment"]))):
        table.to_csv(public / name, index=False, sep="\t")
        if zipped:
            with zipfile.ZipFile(public / f"{name}.zip", "w") as archive:
                archive.write(public / name, arcname=name)
            (public / name).unlink()
    test[["PhraseId"]].assign(Sentiment=2).to_csv(public / "sampleSubmission.csv", index=False)
    test[["PhraseId", "Sentiment"]].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text("# Reviews\n\n## Evaluation\n\nSubmissions are evaluated on accuracy.\n")
    return root


def test_tab_separated_and_zipped_tables_are_read_and_converted(tmp_path):
    for zipped in (False, True):
        folder = reviews_folder(tmp_path / f"reviews-{zipped}", zipped=zipped)
        public = folder / "prepared" / "public"
        train = public / ("train.tsv.zip" if zipped else "train.tsv")
        assert header(train) == ["PhraseId", "SentenceId", "Phrase", "Sentiment"]
        assert frame(train)["Phrase"].iloc[0].endswith("film, truly") and as_csv(train.name) == "train.csv"
        inferred = infer_task(folder)
        spec = inferred.spec
        assert (spec.id_column, spec.target_columns, spec.metric) == ("PhraseId", ["Sentiment"], "accuracy")
        assert (spec.train_file, spec.test_file, spec.sample_submission) == (
            "train.csv",
            "test.csv",
            "sampleSubmission.csv",
        )
        task = folder_task(folder, None, None)
        names = sorted(p.name for p in task.public_dir.iterdir())
        assert names == ["description.md", "sampleSubmission.csv", "test.csv", "train.csv"], names
        assert pd.read_csv(task.train_path).shape == (240, 4)
        assert sorted(p.name for p in public.iterdir())[0] == "description.md"  # the user's folder as it was
        assert not (folder / "prepared" / "task.yaml").exists()


@pytest.mark.slow
def test_a_folder_of_zipped_tab_separated_tables_runs_to_a_graded_submission(tmp_path):
    folder = reviews_folder(tmp_path / "reviews")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["metric"] == "accuracy" and grade["test_score"] > 0.8


def pizza_folder(root, n_train: int = 240, n_test: int = 60):
    """random-acts-of-pizza's public files: JSON arrays of records (the label a JSON boolean, a
    list of subreddits per request), the answers as MLE-bench keeps them (0/1 in a CSV)."""
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    rng = np.random.default_rng(4)
    records = []
    for i in range(n_train + n_test):
        karma = int(rng.integers(0, 500))
        records.append(
            {
                "request_id": f"t3_{i:05x}",
                "request_title": f"[Request] pizza night {i}",
                "requester_upvotes_minus_downvotes_at_request": karma,
                "requester_subreddits_at_request": ["AskReddit", "pizza"][: i % 3],
                "giver_username_if_known": None,
                "requester_received_pizza": bool(karma > 250),
            }
        )
    train, test = records[:n_train], records[n_train:]
    (public / "train.json").write_text(json.dumps(train, indent=4))
    hidden = ("requester_received_pizza",)
    (public / "test.json").write_text(json.dumps([{k: v for k, v in r.items() if k not in hidden} for r in test]))
    (public / "label_map.json").write_text('{"0": "no pizza"}')  # a JSON object: not a table
    answers = pd.DataFrame({"request_id": [r["request_id"] for r in test]})
    answers["requester_received_pizza"] = [int(r["requester_received_pizza"]) for r in test]
    answers.assign(requester_received_pizza=0).to_csv(public / "sampleSubmission.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)
    (public / "description.md").write_text(
        "# Pizza\n\n## Evaluation\n\nSubmissions are evaluated on area under the ROC curve.\n"
    )
    return root


def test_json_records_are_a_table(tmp_path):
    folder = pizza_folder(tmp_path / "random-acts-of-pizza")
    public = folder / "prepared" / "public"
    table = frame(public / "train.json")
    assert table["requester_received_pizza"].isin(["0", "1"]).all()  # JSON booleans as 1 and 0, as the answers
    assert table["requester_subreddits_at_request"].iloc[2] == '["AskReddit", "pizza"]'
    assert table["giver_username_if_known"].iloc[0] == ""
    spec = infer_task(folder).spec
    assert (spec.id_column, spec.target_columns, spec.metric) == ("request_id", ["requester_received_pizza"], "roc_auc")
    assert (spec.train_file, spec.test_file, spec.answers_file) == ("train.csv", "test.csv", "test.csv")
    task = folder_task(folder, None, None)
    assert sorted(p.name for p in task.public_dir.iterdir()) == [
        "description.md", "label_map.json", "sampleSubmission.csv", "test.csv", "train.csv",
    ]  # fmt: skip


def test_json_lines_are_a_table_and_a_one_line_object_is_not(tmp_path):
    folder = pizza_folder(tmp_path / "pizza")
    public = folder / "prepared" / "public"
    for name, lines in (("train", "jsonl"), ("test", "ndjson")):
        records = json.loads((public / f"{name}.json").read_text())
        (public / f"{name}.json").unlink()
        (public / f"{name}.{lines}").write_text("".join(json.dumps(r) + "\n" for r in records))
    (public / "meta.json").write_text('{"source": "reddit", "rows": 2}\n')  # one object on one line: metadata
    assert [p.name for p in json_tables(public)] == ["test.ndjson", "train.jsonl"]  # not label_map.json either
    table = frame(public / "train.jsonl")
    assert table["requester_received_pizza"].isin(["0", "1"]).all()
    assert table["requester_subreddits_at_request"].iloc[2] == '["AskReddit", "pizza"]'
    spec = infer_task(folder).spec
    assert (spec.id_column, spec.target_columns, spec.metric) == ("request_id", ["requester_received_pizza"], "roc_auc")
    assert (spec.train_file, spec.test_file) == ("train.csv", "test.csv")
    (public / "test.ndjson").write_text('{"request_id": "t3_1"}\n{"request_id": \n')  # a broken line
    with pytest.raises(TaskError, match=r"cannot read .*test\.ndjson as JSON"):
        infer_task(folder)


@pytest.mark.slow
def test_a_folder_of_json_records_runs_to_a_graded_submission(tmp_path):
    folder = pizza_folder(tmp_path / "pizza")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["metric"] == "roc_auc" and grade["test_score"] > 0.8


def test_a_folder_of_mlguilds_own_gets_its_files_in_place(tmp_path):
    # a Kaggle download lies in mlguild's own folder: write_inferred converts it in place
    from mlguild.sources.convert_folder import write_inferred
    from mlguild.task.folder import load_task

    folder = reviews_folder(tmp_path / "download", zipped=False)
    flat = tmp_path / "flat"
    (folder / "prepared" / "public").rename(flat)
    inferred = infer_task(flat)
    assert inferred.spec.data_dir == "." and inferred.retyped == ("train.tsv", "test.tsv")
    write_inferred(inferred)
    task = load_task(flat)
    assert sorted(p.name for p in flat.iterdir() if p.suffix in (".csv", ".tsv")) == [
        "sampleSubmission.csv", "test.csv", "train.csv",
    ]  # fmt: skip
    assert pd.read_csv(task.train_path).shape == (240, 4)


def test_tables_packed_alone_in_7z_are_read_and_converted(tmp_path):
    """statoil-iceberg-classifier-challenge's public folder: train.json.7z, test.json.7z and
    sample_submission.csv.7z, one table in each, a band a JSON list of floats."""
    py7zr = pytest.importorskip("py7zr")
    public = tmp_path / "statoil" / "prepared" / "public"
    public.mkdir(parents=True)
    rng = np.random.default_rng(3)
    records = [
        {
            "id": f"{i:08x}",
            "band_1": rng.normal(size=4).round(3).tolist(),
            "inc_angle": 38.5 + i % 3,
            "is_iceberg": i % 2,
        }
        for i in range(80)
    ]
    (public / "train.json").write_text(json.dumps(records[:60]))
    (public / "test.json").write_text(
        json.dumps([{k: v for k, v in r.items() if k != "is_iceberg"} for r in records[60:]])
    )
    pd.DataFrame({"id": [r["id"] for r in records[60:]], "is_iceberg": 0.5}).to_csv(
        public / "sample_submission.csv", index=False
    )
    (public / "description.md").write_text("## Evaluation\n\nSubmissions are evaluated on the log loss.\n")
    for name in ("train.json", "test.json", "sample_submission.csv"):
        with py7zr.SevenZipFile(public / f"{name}.7z", "w") as archive:
            archive.write(public / name, arcname=name)
        (public / name).unlink()
    assert header(public / "train.json.7z") == ["id", "band_1", "inc_angle", "is_iceberg"]
    spec = infer_task(tmp_path / "statoil").spec
    assert (spec.id_column, spec.target_columns, spec.metric) == ("id", ["is_iceberg"], "binary_logloss")
    assert (spec.train_file, spec.test_file, spec.sample_submission) == (
        "train.csv",
        "test.csv",
        "sample_submission.csv",
    )
    task = folder_task(tmp_path / "statoil", None, None, write=False)
    train = pd.read_csv(task.train_path, dtype=str)
    assert len(train) == 60 and json.loads(train["band_1"].iloc[0]) == records[0]["band_1"]
    assert not list(task.public_dir.glob("*.7z"))  # converted into CSV files, the archives left out
    (public / "test.json.7z").write_bytes(b"7z\xbc\xaf\x27\x1c damaged")  # a damaged one: a clear line
    with pytest.raises(TaskError, match=r"cannot read .*test\.json\.7z") as refused:
        frame(public / "test.json.7z")
    assert "unpack test.json.7z by hand" in refused.value.fix
