"""A folder of sequence records whose targets are lists of one value per position, and whose
sample submission asks for one row per position (stanford-covid-vaccine: train.json and
test.json in JSON lines, ``reactivity`` and the others lists over the first ``seq_scored``
positions, ``id_seqpos`` the record's id and the position joined by ``_``): read as one row per
position, with the record's values and each sequence's characters around the position; the run
ends in a valid, graded submission."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild

from mlguild.core.errors import TaskError
from mlguild.sources.infer import infer_task
from mlguild.sources.position_rows import CONTEXT, POSITION
from mlguild.sources.resolve import folder_task

LENGTH, SCORED = 16, 10
TARGETS = ["reactivity", "deg_Mg_pH10"]


def _values(sequence: str, structure: str, rng) -> dict[str, list[float]]:
    """Each position's targets: from its own base, the next one and its structure."""
    nxt = sequence[1:] + "A"
    return {
        "reactivity": [
            round(2.0 * (b == "G") + (n == "C") + rng.normal(0, 0.1), 4) for b, n in zip(sequence, nxt, strict=True)
        ],
        "deg_Mg_pH10": [
            round(1.5 * (s == "(") - (b == "A") + rng.normal(0, 0.1), 4)
            for b, s in zip(sequence, structure, strict=True)
        ],
    }


def sequences_folder(root, n_train: int = 60, n_test: int = 20):
    """stanford-covid-vaccine's public files as its prepare.py writes them, and answers for every
    position of the test records (id_seqpos and the targets)."""
    public, private = root / "prepared" / "public", root / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    rng = np.random.default_rng(0)
    bpps = public / "bpps"
    bpps.mkdir()
    answers = []
    for name, n, offset in (("train", n_train, 0), ("test", n_test, 1000)):
        lines = []
        for i in range(n):
            sequence = "".join(rng.choice(list("ACGU"), LENGTH))
            structure = "".join(rng.choice(list("(.)"), LENGTH))
            record = {"index": i, "id": f"id_{offset + i:09x}", "sequence": sequence, "structure": structure}
            record.update(seq_length=LENGTH, seq_scored=SCORED)
            values = _values(sequence, structure, rng)
            if name == "train":  # the scored positions' values, and what the test records lack
                record.update(signal_to_noise=round(float(rng.uniform(0, 9)), 3))
                record.update(reactivity_error=[0.1] * SCORED, **{t: values[t][:SCORED] for t in TARGETS})
            else:
                for pos in range(LENGTH):
                    answers.append({"id_seqpos": f"{record['id']}_{pos}", **{t: values[t][pos] for t in TARGETS}})
            lines.append(json.dumps(record))
            np.save(bpps / f"{record['id']}.npy", np.zeros((LENGTH, LENGTH)))  # a record's own matrix
        (public / f"{name}.json").write_text("\n".join(lines) + "\n")
    answers_frame = pd.DataFrame(answers)
    answers_frame.to_csv(private / "answers.csv", index=False)
    answers_frame[["id_seqpos"]].assign(**dict.fromkeys(TARGETS, 0.0)).to_csv(
        public / "sample_submission.csv", index=False
    )
    (public / "description.md").write_text(
        "# Sequences\n\n## Evaluation\n\nSubmissions are scored using MCRMSE, mean columnwise root mean "
        "squared error.\n"
    )
    return root


def test_sequence_records_are_read_as_one_row_per_position(tmp_path, monkeypatch):
    monkeypatch.setenv("MLGUILD_HOME", str(tmp_path / "home"))
    folder = sequences_folder(tmp_path / "seq")
    public = folder / "prepared" / "public"
    before = sorted(p.name for p in public.iterdir())
    inferred = infer_task(folder)
    spec = inferred.spec
    assert spec.id_column == "id_seqpos" and spec.target_columns == TARGETS
    assert spec.task_type == "regression" and spec.metric == "mcrmse" and inferred.converted
    assert spec.modality == "tabular" and spec.file_column is None  # bpps/<id>.npy: a record's, not a row's
    assert any("one row per position" in note for note in inferred.notes)
    task = folder_task(folder, None, None)
    train = pd.read_csv(task.root / "public" / task.spec.train_file, dtype=str)
    test = pd.read_csv(task.root / "public" / task.spec.test_file, dtype=str, keep_default_na=False)
    assert len(train) == 60 * SCORED and len(test) == 20 * LENGTH  # the scored positions; every asked one
    sample = pd.read_csv(public / "sample_submission.csv", dtype=str)
    assert test["id_seqpos"].tolist() == sample["id_seqpos"].tolist()
    # the record's values the test records hold too; not what they lack (a train-only number, the errors)
    assert {"id", POSITION, "seq_length", "sequence", "structure"} <= set(test.columns)
    assert "signal_to_noise" not in train.columns and "reactivity_error" not in train.columns
    # each position's character and its neighbours', empty past the ends
    records = {json.loads(line)["id"]: json.loads(line) for line in (public / "test.json").read_text().splitlines()}
    last = test.iloc[LENGTH - 1]
    sequence = records[last["id"]]["sequence"]
    assert last[POSITION] == str(LENGTH - 1) and last["sequence"] == sequence[-1]
    assert last["sequence_m1"] == sequence[-2] and last[f"sequence_p{CONTEXT}"] == ""
    first = train.iloc[0]
    assert (
        float(first["reactivity"]) == json.loads((public / "train.json").read_text().splitlines()[0])["reactivity"][0]
    )
    assert sorted(p.name for p in public.iterdir()) == before  # the user's folder is untouched


def test_ids_that_are_no_test_records_positions_are_refused(tmp_path):
    folder = sequences_folder(tmp_path / "seq")
    sample_path = folder / "prepared" / "public" / "sample_submission.csv"
    sample = pd.read_csv(sample_path, dtype=str)
    sample["id_seqpos"] = "other_" + sample["id_seqpos"]  # records no file holds
    sample.to_csv(sample_path, index=False)
    with pytest.raises(TaskError, match="id_seqpos"):
        infer_task(folder)


def test_target_lists_of_different_lengths_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MLGUILD_HOME", str(tmp_path / "home"))
    folder = sequences_folder(tmp_path / "seq")
    path = folder / "prepared" / "public" / "train.json"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[-1]["deg_Mg_pH10"] = records[-1]["deg_Mg_pH10"][:-1]  # one list a value short
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(TaskError, match="one number per position"):
        folder_task(folder, None, None)


def test_a_folder_of_sequence_records_runs_to_a_graded_submission(tmp_path):
    folder = sequences_folder(tmp_path / "seq")
    done = mlguild("run", str(folder), "--brain", "recipes", "-n", "1", "--run-id", "r", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    grade = json.loads((tmp_path / "runs" / "r" / "audit" / "final_grade.json").read_text())
    answers = pd.read_csv(folder / "prepared" / "private" / "answers.csv")
    train = [json.loads(line) for line in (folder / "prepared" / "public" / "train.json").read_text().splitlines()]
    mean = {t: float(np.mean([v for r in train for v in r[t]])) for t in TARGETS}
    constant = float(np.mean([np.sqrt(np.mean((answers[t] - mean[t]) ** 2)) for t in TARGETS]))
    assert grade["valid"] and grade["metric"] == "mcrmse" and grade["test_score"] < 0.6 * constant, (grade, constant)
