"""The fine-tuning recipe (offered only where a GPU is there) runs as rendered, on the CPU at a
toy size, in the real sandbox: the same script a GPU machine runs, told ``MLGUILD_DEVICE=cpu``
and an empty ``CUDA_VISIBLE_DEVICES`` as the harness tells it on a machine without one. Its
images are real photographs (crops of the two colour photographs scikit-learn ships); it must
write holdout and submission files a scorer accepts, and keep its fitted models."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mlguild.brains.recipes.draft import draft_meta
from mlguild.brains.recipes.render import render_script
from mlguild.firewall.workspace import HOLDOUT_FILES
from mlguild.sandbox import Limits, backbones, devices, get_sandbox, safe_env
from mlguild.task.folder import TaskSpec

pytest.importorskip("efficientnet_lite_pytorch", reason="needs the [vision] extra")
pytestmark = pytest.mark.skipif(backbones.IMAGE not in backbones.find_backbones(), reason="needs the [vision] extra")

PHOTOS = ("china.jpg", "flower.jpg")  # a temple, a flower: the label is the photograph a crop comes from


def photo_crops(data, n_train=16, n_holdout=6, n_test=6, side=64):
    """Crops of scikit-learn's sample photographs at random places and mirrorings, laid out
    as the firewall lays out an image task's workspace (train/, holdout_files/, test/)."""
    from sklearn.datasets import load_sample_image

    rng = np.random.default_rng(0)
    photos = [load_sample_image(name) for name in PHOTOS]
    parts = {"train": ("train", n_train), "holdout": (HOLDOUT_FILES, n_holdout), "test": ("test", n_test)}
    rows = {part: [] for part in parts}
    for part, (folder, n) in parts.items():
        (data / folder).mkdir(parents=True)
        for k in range(n):
            label = k % len(PHOTOS)
            photo = photos[label]
            top, left = rng.integers(0, photo.shape[0] - 160), rng.integers(0, photo.shape[1] - 160)
            crop = Image.fromarray(photo[top : top + 160, left : left + 160]).resize((side, side))
            if rng.random() < 0.5:
                crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
            name = f"{part[0]}{k:03d}"
            crop.save(data / folder / f"{name}.jpg", quality=90)
            rows[part].append({"id": name, "image": name, "label": PHOTOS[label].split(".")[0]})
    frames = {part: pd.DataFrame(r) for part, r in rows.items()}
    frames["train"].to_csv(data / "train.csv", index=False)
    for part, file in (("holdout", "holdout.csv"), ("test", "test.csv")):
        frames[part].drop(columns="label").to_csv(data / file, index=False)
    return frames


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_finetune_recipe_runs_on_the_cpu_at_a_toy_size_in_the_sandbox(tmp_path):
    data, node = tmp_path / "data", tmp_path / "node"
    frames = photo_crops(data)
    spec = TaskSpec(
        name="photos", task_type="binary", modality="image_files", metric="accuracy", id_column="id",
        target_columns=["label"], submission_columns=["id", "label"], file_column="image",
        train_files="train", test_files="test", file_suffix=".jpg",
    )  # fmt: skip
    task = spec.public_dict()
    profile = {"n_train": 16, "columns": [], "target": {}, "files": {"kind": "image", "colour": True}}
    meta = draft_meta("backbone_finetune", task, profile)
    # The toy size: 64 px images, two folds of two epochs (the GPU default is 224 px, 5 x 6).
    meta["features"]["image_size"] = 64
    meta["params"].update(epochs=2, batch_size=8)
    meta["run"]["n_folds"] = 2
    code = render_script(task, profile, meta, "toy fine-tune")
    node.mkdir()
    (node / "solution.py").write_text(code)

    env = safe_env(
        cwd=node,
        extra={
            "MLGUILD_SEED": "0",
            "MLGUILD_TIME_BUDGET": "600",
            "MLGUILD_THREADS": "1",
            **devices.script_env(()),  # what the harness tells a script on a machine with no GPU
            **backbones.script_env(),
        },
    )
    done = get_sandbox("auto").run(
        [sys.executable, "solution.py"],
        cwd=node,
        env=env,
        limits=Limits(timeout_s=800),
        stdout_path=node / "stdout.txt",
        stderr_path=node / "stderr.txt",
        data_dir=data,
    )
    stdout, stderr = (node / "stdout.txt").read_text(), (node / "stderr.txt").read_text()
    assert done.status.value == "ok", stdout[-3000:] + stderr[-3000:]
    assert "images: 28 files read in colour at 64 x 64" in stdout
    assert "fine-tuning EfficientNet-Lite0 on cpu at 64 px" in stdout
    assert "CUDA" not in stderr  # a CPU run: no CUDA probe, no warnings about one

    labels = set(frames["train"]["label"])
    for file, part in (("holdout.csv", "holdout"), ("submission.csv", "test")):
        written = pd.read_csv(node / "output" / file, dtype=str)
        assert list(written.columns) == ["id", "label"], file
        assert written["id"].tolist() == frames[part]["id"].tolist(), file
        assert set(written["label"]) <= labels, file
    proba = pd.read_csv(node / "output" / "proba_holdout.csv").drop(columns="id").to_numpy()
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)
    assert len(pd.read_csv(node / "output" / "oof.csv")) == len(frames["train"])
    manifest = json.loads((node / "output" / "model" / "mlguild-model.json").read_text())
    assert manifest["folds"] == 2  # the fitted networks were kept (on the CPU) for `mlguild predict`
