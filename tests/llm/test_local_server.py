"""A local LLM server (Ollama, vLLM, llama.cpp) that is not running, as a user meets it on the
command line (issue 25, item 6): one connect says so before anything is created, naming the
address and the fix, instead of every call waiting out its retries and the brief falling back
to heuristics. Real sockets: a closed port, and a real local HTTP server for the reachable case."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from conftest import make_task, mlguild, one_line

from mlguild.llm.reach import local_address

from .servers import reply

SCRIPT = """import math, os
from pathlib import Path
import pandas as pd

data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    prob = 1 / (1 + (-3.0 * frame["x0"]).map(math.exp))
    pd.DataFrame({"id": frame["id"], "y": prob}).to_csv("output/" + dst, index=False)
"""
FULL = f"Plan: a logistic curve on x0.\n\n```python\n{SCRIPT}```\n"


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _llm_calls(runs: Path) -> list[dict]:
    (run,) = runs.iterdir()
    lines = (run / "journal.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "llm_call"]


@pytest.mark.parametrize(
    "model, variable, fix",
    [
        (
            "ollama/qwen2.5-coder:14b",
            "MLGUILD_OLLAMA_BASE_URL",
            "fix: start it with `ollama serve` (and `ollama pull qwen2.5-coder:14b`), or set MLGUILD_OLLAMA_BASE_URL;"
            " or run without an LLM: --brain recipes",
        ),
        (
            "vllm/coder",
            "MLGUILD_VLLM_BASE_URL",
            "fix: start the server at http://127.0.0.1:{port}/v1, or check its address (MLGUILD_VLLM_BASE_URL);"
            " or run without an LLM: --brain recipes",
        ),
    ],
)
def test_a_local_server_that_is_not_running_stops_the_run_before_anything_is_created(
    tmp_path, closed_port, model, variable, fix
):
    task = make_task(tmp_path / "task")
    url = f"http://127.0.0.1:{closed_port}/v1"
    proc = mlguild("run", str(task), "--model", model, "--iterations", "2", cwd=tmp_path, env={variable: url})
    err = one_line(proc.stderr)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"error: no LLM server answers at {url} ({model}: connection refused)" in err
    assert fix.format(port=closed_port) in err
    assert "Traceback" not in err and "heuristics" not in proc.stdout
    assert not (tmp_path / "runs").exists()  # no run folder, so not one LLM request was attempted


def test_a_silent_server_in_a_chain_is_warned_about_once_and_never_called(tmp_path, closed_port, server):
    """ollama is down, the vllm fallback (a real local HTTP server) answers: one warning, and the
    run's every LLM call goes straight to the fallback (zero attempts on the dead address)."""
    server.script("coder", *[reply(FULL) for _ in range(8)])
    task = make_task(tmp_path / "task")
    dead = f"http://127.0.0.1:{closed_port}/v1"
    proc = mlguild(
        "run", str(task), "--model", "ollama/qwen", "--model", "vllm/coder", "--iterations", "1",
        "--sandbox", "local", "--quiet", cwd=tmp_path,
        env={"MLGUILD_OLLAMA_BASE_URL": dead, "MLGUILD_VLLM_BASE_URL": server.url + "/v1"},
    )  # fmt: skip
    out = one_line(proc.stdout)  # a run's warnings are among its announced lines
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.count("warning: no LLM server answers") == 1
    assert f"warning: no LLM server answers at {dead} (ollama/qwen: connection refused); the run goes on" in out
    assert "`ollama serve`" in out
    calls = _llm_calls(tmp_path / "runs")
    assert calls and {c["model"] for c in calls} == {"vllm/coder"}
    assert all(c["outcome"] == "ok" for c in calls)
    assert len(server.requests_for("coder")) == len(calls)
    assert "brief" in {c["purpose"] for c in calls}  # asked of the model that answers, at once


def test_a_reachable_local_server_gets_no_warning_and_serves_the_run(tmp_path, server):
    server.script("coder", *[reply(FULL) for _ in range(8)])
    task = make_task(tmp_path / "task")
    proc = mlguild(
        "run", str(task), "--model", "ollama/coder", "--iterations", "1", "--sandbox", "local", "--quiet",
        cwd=tmp_path, env={"MLGUILD_OLLAMA_BASE_URL": server.url + "/v1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no LLM server" not in proc.stdout + proc.stderr
    calls = _llm_calls(tmp_path / "runs")
    assert calls and all(c["model"] == "ollama/coder" and c["outcome"] == "ok" for c in calls)
    assert len(server.requests_for("coder")) == len(calls)


@pytest.mark.parametrize(
    "url, address",
    [
        ("http://localhost:11434/v1", ("localhost", 11434)),
        ("http://127.0.0.2:8000/v1", ("127.0.0.2", 8000)),
        ("http://[::1]:8080/v1", ("::1", 8080)),
        ("http://localhost/v1", ("localhost", 80)),
        ("https://api.openai.com/v1", None),  # remote: the Router's retries, not a probe
        ("http://192.168.1.5:11434/v1", None),
    ],
)
def test_only_addresses_on_this_machine_are_probed(url, address):
    assert local_address(url) == address
