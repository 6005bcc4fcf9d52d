"""GPU discovery through its seam (a fake nvidia-smi, or CUDA_VISIBLE_DEVICES), each worker's
share of the GPUs, what a script is told, and a run of two workers on two (fake) GPUs: each
node's journal record and `mlguild status` say which device it used, and no script is told a
device ordinal it was not given."""

from __future__ import annotations

import json
import os

import pytest
from conftest import make_task, mlguild

from mlguild.sandbox import devices


def fake_smi(tmp_path, lines: str, code: int = 0):
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!/bin/sh\nprintf '{lines}'\nexit {code}\n")
    path.chmod(0o755)
    return str(path)


def test_cuda_visible_devices_is_the_users_choice():
    assert devices.discover({"CUDA_VISIBLE_DEVICES": "2,3"}) == ("2", "3")
    assert devices.discover({"CUDA_VISIBLE_DEVICES": ""}) == ()
    assert devices.discover({"CUDA_VISIBLE_DEVICES": "-1"}) == ()


def test_nvidia_smi_lists_the_gpus(tmp_path):
    assert devices.discover({devices.SMI_ENV: fake_smi(tmp_path, "0\\n1\\n")}) == ("0", "1")
    broken = tmp_path / "broken"
    broken.mkdir()
    assert devices.discover({devices.SMI_ENV: fake_smi(broken, "NVIDIA-SMI has failed\\n", 9)}) == ()
    assert devices.discover({devices.SMI_ENV: str(tmp_path / "missing")}) == ()


def test_workers_split_the_gpus():
    two = ("0", "1")
    assert [devices.share(two, k, 2) for k in (1, 2)] == [("0",), ("1",)]
    four = ("0", "1", "2", "3")
    assert [devices.share(four, k, 2) for k in (1, 2)] == [("0", "2"), ("1", "3")]
    assert [devices.share(("0",), k, 3) for k in (1, 2, 3)] == [("0",)] * 3  # fewer GPUs: shared
    assert devices.share((), 1, 2) == ()
    assert devices.share(two, 1, 1) == two


def test_a_script_is_told_its_device():
    assert devices.script_env(()) == {"CUDA_VISIBLE_DEVICES": "", "MLGUILD_DEVICE": "cpu"}
    assert devices.script_env(("1",)) == {"CUDA_VISIBLE_DEVICES": "1", "MLGUILD_DEVICE": "cuda"}
    assert devices.describe(()) == "cpu" and devices.describe(("0", "2")) == "gpu 0,2"


def test_two_workers_on_two_gpus_use_different_devices(tmp_path):
    task = make_task(tmp_path / "task", n=300)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env[devices.SMI_ENV] = fake_smi(tmp_path, "0\\n1\\n")
    done = mlguild(
        "run", str(task), "--brain", "recipes", "-n", "4", "--workers", "2", "--run-id", "g", cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "g"
    journal = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    worker = {r["node"]["id"]: r["node"].get("worker", 1) for r in journal if r["type"] == "node_started"}
    used = {r["id"]: r["exec"]["device"] for r in journal if r["type"] == "node_finished" and r.get("exec")}
    assert used and all(device == f"gpu {worker[node] - 1}" for node, device in used.items())
    assert len(set(used.values())) == 2  # both GPUs were used, one per worker
    status = mlguild("status", str(run), cwd=tmp_path, env=env)
    assert "device" in status.stdout and "gpu 0" in status.stdout and "gpu 1" in status.stdout


def test_a_cpu_run_says_so_and_tells_scripts_cpu(tmp_path):
    task = make_task(tmp_path / "task", n=200)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = mlguild("run", str(task), "--brain", "recipes", "-n", "1", "--run-id", "c", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    status = mlguild("status", str(tmp_path / "runs" / "c"), cwd=tmp_path, env=env)
    assert "device: every node's script ran on the cpu (" in " ".join(status.stdout.split())


# Never beside one another: these tests kill sandboxed processes, and the lifecycle test of a
# namespace left to its init lost that namespace to a kill from a test run beside it.
pytestmark = pytest.mark.xdist_group("process-kills")
