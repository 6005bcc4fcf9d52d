"""Pretrained backbones against what mlguild had before them, on the bundled examples.

What it measures, with the recipe brain's own rendered scripts (``render_script`` of each
recipe's draft), run as plain processes on a workspace made from the example (the example's
train rows; its test rows stand in as the holdout, scored against its private answers):

* photos (colour image files): ``backbone_lightgbm`` (ImageNet EfficientNet-Lite0 embeddings
  at 224 px, then LightGBM) against ``small_cnn`` (the small CPU network on 32 x 32 grey
  pixels) at equal wall clock: the CNN is given the time budget under which its
  cross-validation takes as long as the backbone script did, embedding included (both wall
  times are printed); also ``backbone_linear`` on the embeddings the first script cached;
* the embedding speed: images per second through EfficientNet-Lite0 at 224 px on this CPU,
  with 1 and 2 threads;
* reviews (text): ``tfidf_linear`` (TF-IDF alone) against ``tfidf_sentences`` (TF-IDF plus
  all-MiniLM-L6-v2 sentence embeddings), both ROC AUC on the test rows; also
  ``tfidf_sentences`` again on the sentence embeddings the first one cached.

Run (small budgets; the machine's cores are shared, so wall times vary run to run)::

    .venv/bin/python benchmarks/backbones.py                 # both examples
    .venv/bin/python benchmarks/backbones.py --only photos --budget 300
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlguild.brains.recipes.draft import draft_meta
from mlguild.brains.recipes.render import render_script
from mlguild.sandbox import backbones
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task
from mlguild.task.profile import profile_workspace
from mlguild.util.exact_csv import read_csv_exact


def workspace(example: Path, dest: Path) -> tuple[dict, dict, pd.DataFrame]:
    """A data folder as the firewall lays one out, with the example's test rows as the holdout;
    (task, profile, answers)."""
    task = load_task(example)
    spec = task.spec
    data = dest / "data"
    shutil.copytree(task.public_dir, data)
    test = pd.read_csv(data / spec.test_file, dtype=str)
    test.to_csv(data / "holdout.csv", index=False)
    if spec.file_column is not None:
        shutil.copytree(data / str(spec.test_files), data / "holdout_files")
    public = spec.public_dict()
    answers = pd.read_csv(task.root / "private" / (spec.answers_file or "answers.csv"), dtype=str)
    return public, profile_workspace(data, public).to_dict(), answers


def run_recipe(
    name: str, task: dict, profile: dict, data: Path, budget_s: float, cache: Path | None = None
) -> tuple[Path, float, str]:
    """Render recipe ``name``'s draft and run it; (its output folder, wall seconds, stdout).
    ``cache``: a folder of embeddings to read (None: an empty one, so the script embeds)."""
    node = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=data.parent))
    meta = draft_meta(name, task, profile)
    (node / "solution.py").write_text(render_script(task, profile, meta, f"benchmark of {name}"))
    if cache is None:
        cache = node / "empty-cache"
        cache.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(node),
        "MLGUILD_DATA": str(data),
        "MLGUILD_SEED": "0",
        "MLGUILD_TIME_BUDGET": str(int(budget_s)),
        "MLGUILD_THREADS": "2",
        "MLGUILD_EMBEDDINGS": str(cache),
        "CUDA_VISIBLE_DEVICES": "",
        "MLGUILD_DEVICE": "cpu",
        **backbones.script_env(),
    }
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=4 * budget_s + 600
    )
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return node / "output", wall, done.stdout


def test_score(example: Path, output: Path) -> float:
    """A script's predictions for the example's test rows, scored by mlguild's own scorer with
    the task's metric against its private answers (as a run's grade is)."""
    task = load_task(example)
    spec = task.spec
    train = read_csv_exact(task.train_path)
    labels = set(train[spec.target_columns[0]]) if spec.task_type in ("binary", "multiclass") else set()
    return Scorer.from_file(spec, task.answers_path, labels=labels).score(output / "holdout.csv").value


def images_per_second(folder: Path, n: int = 64) -> dict[str, float]:
    """EfficientNet-Lite0 embeddings of ``n`` real images at 224 px, with 1 and 2 threads."""
    import torch
    from efficientnet_lite_pytorch import EfficientNet
    from PIL import Image

    weights = backbones.find_backbones()[backbones.IMAGE].path
    model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=str(weights)).eval()
    paths = sorted(folder.iterdir())[:n]
    batch = np.stack(
        [
            (np.asarray(Image.open(p).convert("RGB").resize((224, 224)), dtype=np.float32) / 255.0 - 0.5) / 0.5
            for p in paths
        ]
    ).transpose(0, 3, 1, 2)
    speeds = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        with torch.no_grad():
            model.extract_features(torch.from_numpy(batch[:8])).mean(dim=(2, 3))  # warm up
            start = time.monotonic()
            for i in range(0, len(batch), 16):
                model.extract_features(torch.from_numpy(batch[i : i + 16])).mean(dim=(2, 3))
        speeds[f"{threads} thread{'s' if threads > 1 else ''}"] = round(len(batch) / (time.monotonic() - start), 2)
    return speeds


def photos(root: Path, budget_s: float) -> dict:
    example = build_example("photos", root / "photos-task")
    task, profile, answers = workspace(example, root / "photos")
    data = root / "photos" / "data"
    result: dict = {"train_images": profile["n_train"], "test_images": len(answers)}
    result["embedding_images_per_s"] = images_per_second(data / str(task["train_files"]))
    out, wall, _ = run_recipe("backbone_lightgbm", task, profile, data, budget_s)
    embedded = out
    result["backbone_lightgbm"] = {"accuracy": test_score(example, out), "wall_s": round(wall, 1)}
    # The CNN's folds take 0.9 x half its budget: a budget of 2.2 x the backbone's wall time
    # makes its cross-validation (what both scripts spend their time on) as long.
    out, cnn_wall, _ = run_recipe("small_cnn", task, profile, data, max(60.0, 2.2 * wall))
    result["small_cnn_equal_wall"] = {"accuracy": test_score(example, out), "wall_s": round(cnn_wall, 1)}
    # The linear head reads the embeddings the LightGBM script computed (as a run's later nodes do).
    out, wall, _ = run_recipe("backbone_linear", task, profile, data, budget_s, cache=embedded / "embeddings")
    result["backbone_linear_cached_embeddings"] = {
        "accuracy": test_score(example, out),
        "wall_s": round(wall, 1),
    }
    return result


def reviews(root: Path, budget_s: float) -> dict:
    example = build_example("reviews", root / "reviews-task")
    task, profile, answers = workspace(example, root / "reviews")
    data = root / "reviews" / "data"
    result: dict = {"train_rows": profile["n_train"], "test_rows": len(answers)}
    for name in ("tfidf_linear", "tfidf_sentences"):
        out, wall, _ = run_recipe(name, task, profile, data, budget_s)
        result[name] = {"roc_auc": round(test_score(example, out), 4), "wall_s": round(wall, 1)}
    # A later sentence node reads the embeddings the first one computed (as a run's later nodes
    # and its final refit do): what it costs once the encoder has run.
    out, wall, stdout = run_recipe("tfidf_sentences", task, profile, data, budget_s, cache=out / "embeddings")
    assert "read from the run's cache" in stdout, stdout[-2000:]
    result["tfidf_sentences_cached_embeddings"] = {
        "roc_auc": round(test_score(example, out), 4),
        "wall_s": round(wall, 1),
    }
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["photos", "reviews"], help="Run one example only.")
    ap.add_argument("--budget", type=float, default=600, help="MLGUILD_TIME_BUDGET of each script, seconds.")
    ap.add_argument("--out", type=Path, help="Write the results as JSON here too.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mlguild-backbones-") as tmp:
        results = {}
        if args.only in (None, "photos"):
            results["photos"] = photos(Path(tmp), args.budget)
        if args.only in (None, "reviews"):
            results["reviews"] = reviews(Path(tmp), args.budget)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
