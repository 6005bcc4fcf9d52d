"""On a machine with a GPU only (skipped elsewhere; run it with MLGUILD_GPU_TEST=1, see
docs/guides/images-text-audio.md): recipe scripts run on the GPU inside the sandbox (the
backbone's embeddings and the fine-tuning recipe, which is offered only there), and two
workers use their own GPU each (the same one, shared, on a one-GPU machine).

    MLGUILD_GPU_TEST=1 .venv/bin/python -m pytest tests/gpu/test_gpu.py -v

The scripts need a CUDA build of torch in the environment (the [torch] extra's pin is the CPU
build: on a GPU machine install torch==2.13.0 from the CUDA wheel index first). Both tests
run on a third of the photos example, a few minutes in all on a GPU machine."""

from __future__ import annotations

import json
import os

import pytest
from conftest import mlguild, slice_task

from mlguild.sandbox import devices
from mlguild.sources.examples import build_example

GPUS = devices.discover()
pytestmark = pytest.mark.skipif(
    os.environ.get("MLGUILD_GPU_TEST") != "1" or not GPUS, reason="needs a GPU and MLGUILD_GPU_TEST=1"
)


@pytest.fixture(autouse=True)
def _cuda_torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("skimage", reason="needs the [examples] extra")
    assert torch.cuda.is_available(), f"torch {torch.__version__} is a CPU build: install a CUDA build of torch first"


def finished(run) -> dict[str, dict]:
    records = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in records if r["type"] == "node_finished"}


def photos(tmp_path):
    return slice_task(build_example("photos", tmp_path / "example"), tmp_path / "photos", 180, 45)


@pytest.mark.timeout(1200)
def test_recipe_scripts_run_on_the_gpu(tmp_path):
    done = mlguild(
        "run", str(photos(tmp_path)), "--brain", "recipes", "-n", "3", "--run-id", "g", cwd=tmp_path, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "g"
    stdout = {n: (run / "nodes" / n / "stdout.txt").read_text() for n in ("n0001", "n0003")}
    assert "embedded at 224 px on cuda" in stdout["n0001"]  # the backbone's embeddings, on the GPU
    assert "fine-tuning EfficientNet-Lite0 on cuda at 224 px" in stdout["n0003"]  # offered only with a GPU
    nodes = finished(run)
    assert nodes["n0003"]["status"] == "scored", nodes["n0003"].get("failure")
    assert {nodes[n]["exec"]["device"] for n in ("n0001", "n0002", "n0003")} == {f"gpu {GPUS[0]}"}


@pytest.mark.timeout(1200)
def test_two_workers_use_their_own_gpus(tmp_path):
    args = ("run", str(photos(tmp_path)), "--brain", "recipes", "-n", "3", "--workers", "2", "--run-id", "w")
    done = mlguild(*args, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "w"
    nodes = {n: r for n, r in finished(run).items() if r.get("exec")}
    expected = {f"gpu {devices.share(GPUS, k, 2)[0]}" for k in (1, 2)}
    assert {r["exec"]["device"] for r in nodes.values()} == expected  # two GPUs: one each; one GPU: both on it
    # each script (all three use the backbone) used the GPU it was given: it embedded or fine-tuned
    # there, or read the embeddings another node computed
    for node in nodes:
        out = (run / "nodes" / node / "stdout.txt").read_text()
        assert "on cuda" in out or "read from the run's cache" in out, node
    assert any("on cuda" in (run / "nodes" / n / "stdout.txt").read_text() for n in nodes)
