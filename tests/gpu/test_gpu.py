"""On a machine with a GPU only (skipped elsewhere; run it with MLGUILD_GPU_TEST=1, see
docs/guides/images-text-audio.md): a recipe script runs on the GPU inside the sandbox, and two
workers use their own GPU each (the same one, shared, on a one-GPU machine).

    MLGUILD_GPU_TEST=1 .venv/bin/python -m pytest tests/gpu/test_gpu.py -v

The scripts need a CUDA build of torch in the environment (the [torch] extra's pin is the CPU
build: on a GPU machine install torch==2.13.0 from the CUDA wheel index first)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import make_task, mlguild

from mlguild.sandbox import devices

GPUS = devices.discover()
pytestmark = pytest.mark.skipif(
    os.environ.get("MLGUILD_GPU_TEST") != "1" or not GPUS, reason="needs a GPU and MLGUILD_GPU_TEST=1"
)


def finished(run) -> dict[str, dict]:
    records = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in records if r["type"] == "node_finished"}


@pytest.mark.timeout(1200)
def test_a_recipe_script_runs_on_the_gpu(tmp_path):
    done = mlguild("run", "example:photos", "--brain", "recipes", "-n", "1", "--run-id", "g", cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "g"
    assert "embedded at 224 px on cuda" in (run / "nodes" / "n0001" / "stdout.txt").read_text()
    assert finished(run)["n0001"]["exec"]["device"] == f"gpu {GPUS[0]}"


def test_two_workers_use_their_own_gpus(tmp_path):
    task = make_task(tmp_path / "task", n=300)
    done = mlguild("run", str(task), "--brain", "recipes", "-n", "4", "--workers", "2", "--run-id", "w", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    used = {r["exec"]["device"] for r in finished(tmp_path / "runs" / "w").values() if r.get("exec")}
    expected = {f"gpu {devices.share(GPUS, k, 2)[0]}" for k in (1, 2)}
    assert used == expected  # two GPUs: one each; one GPU: both on it
