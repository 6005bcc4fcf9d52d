"""The whole loop with the LLM brain, through each provider's real SDK client code and a local
server speaking its wire format: full scripts, truncated replies completed by continuation,
prose-only replies, diffs that apply and diffs that do not, 429s, 500s, and a quota error on one
model while another serves. Every failure must be recorded by name; nothing internal is mocked."""

from __future__ import annotations

import pytest
from conftest import make_task

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.config import load_config
from mlguild.llm import Ledger, Router, make_llm
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.task.folder import load_task

from .sdks import needs_anthropic, needs_gemini, needs_openai
from .servers import malformed, quota, rate_limited, reply, server_error, slow, truncated

SCRIPT = """import math, os
from pathlib import Path
import pandas as pd

data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
SLOPE = 3.0
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    prob = 1 / (1 + (-SLOPE * frame["x0"]).map(math.exp))
    pd.DataFrame({"id": frame["id"], "y": prob}).to_csv("output/" + dst, index=False)
print("cv_score: 0.9")
"""
FULL = f"Plan: a logistic curve on x0, the informative feature.\n\n```python\n{SCRIPT}```\n"
HALF = SCRIPT.index("for src")
CUT = f"Plan: the same curve, written in two parts.\n\n```python\n{SCRIPT[:HALF]}"
REST = f"```python\n{SCRIPT[HALF:]}```\n"
PROSE = "I would use gradient boosting with target encoding and careful validation."
GOOD_DIFF = "Steeper curve: the signal is strong.\n<<<<<<< SEARCH\nSLOPE = 3.0\n=======\nSLOPE = 6.0\n>>>>>>> REPLACE\n"
BAD_DIFF = (
    "Try a new feature.\n<<<<<<< SEARCH\nfeatures = build(frame)\n=======\nfeatures = build(frame, extra=True)\n"
    ">>>>>>> REPLACE\n"
)

PROVIDERS = [
    pytest.param("openai", "gpt-4.1", marks=needs_openai),
    pytest.param("anthropic", "claude-haiku-4-5", marks=needs_anthropic),
    pytest.param("gemini", "gemini-2.5-flash", marks=needs_gemini),
]


def _run(tmp_path, models, sleeps, **sets):
    task = make_task(tmp_path / "task")
    cfg = load_config(
        None,
        [
            f"{k}={v}"
            for k, v in {
                "budget.iterations": 5,
                "brain.eda": False,  # the exploratory node has its own tests (tests/brains/test_eda.py)
                "search.policy": "greedy",  # the scripted replies follow its order of actions
                "search.num_drafts": 3,
                "search.draft_every": 0,
                "search.max_debug_depth": 0,
                "sandbox.script_timeout_s": 30,
                **sets,
            }.items()
        ],
    )
    run = create_run(load_task(task), cfg, tmp_path / "runs")
    ledger = Ledger(sink=lambda rec: run.journal.append("llm_call", **rec))
    router = Router([make_llm(m) for m in models], sleep=sleeps, seed=0, ledger=ledger)
    brain = LLMBrain(router, LLMBrainOptions(max_tokens=4000, timeout_s=1.0))
    agent = Agent(open_session(run, brain))
    agent.run_loop()
    return agent, run


@pytest.mark.parametrize("provider, model", PROVIDERS)
def test_loop_survives_real_replies_and_service_failures(server, point_at, sleeps, tmp_path, provider, model):
    point_at(provider)
    server.script(
        model,
        rate_limited(7),
        malformed(),
        slow(3),
        reply(FULL),  # n0001: 429, malformed JSON, a reply past the timeout
        truncated(CUT),
        server_error(500),
        reply(REST),  # n0002: cut off; the continuation survives a 500
        reply(PROSE),
        reply(PROSE),  # n0003: prose twice (once re-prompted): no_code
        reply(GOOD_DIFF),  # n0004: improve by a diff that applies
        reply(BAD_DIFF),
        reply(BAD_DIFF),
        reply(BAD_DIFF),
        reply(FULL),  # n0005: diffs fail, then a rewrite
    )
    agent, run = _run(tmp_path, [f"{provider}/{model}"], sleeps)
    graph = agent.session.state.graph
    assert [n.status for n in graph] == ["scored", "scored", "no_code", "scored", "scored"], [
        (n.id, n.status, n.failure) for n in graph
    ]
    assert 7 in sleeps  # Retry-After was honoured
    assert (run.node_dir("n0002") / "solution.py").read_text().count("for src") == 1  # joined, not duplicated
    assert graph["n0003"].failure.startswith("The reply contains no Python code.")
    assert "SLOPE = 6.0" in (run.node_dir("n0004") / "solution.py").read_text()
    assert graph["n0004"].score == pytest.approx(graph["n0001"].score)  # AUC ignores a monotone change
    assert (run.best_dir / "submission.csv").exists()
    calls = [r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "llm_call"]
    outcomes = [c["outcome"] for c in calls]
    assert outcomes.count("RateLimited") == 1 and outcomes.count("TransientError") == 1
    assert outcomes.count("BadResponse") == 1 and outcomes.count("LLMTimeout") == 1
    assert {c["purpose"] for c in calls} >= {
        "draft",
        "draft:continue",
        "draft:reformat",
        "improve:diff",
        "improve:diff_retry",
        "improve:rewrite",
    }
    assert all(c["node"] for c in calls)


@needs_openai
@needs_anthropic
def test_quota_on_one_model_while_another_serves(server, point_at, sleeps, tmp_path):
    point_at("anthropic")
    point_at("openai")
    server.script("claude-haiku-4-5", quota())
    server.script("gpt-4.1", *[reply(FULL)] * 3, reply(GOOD_DIFF), reply(GOOD_DIFF))
    agent, run = _run(tmp_path, ["anthropic/claude-haiku-4-5", "openai/gpt-4.1"], sleeps)
    assert all(n.ok for n in agent.session.state.graph), [
        (n.id, n.status, n.failure) for n in agent.session.state.graph
    ]
    calls = [r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "llm_call"]
    assert [c["outcome"] for c in calls if c["model"].startswith("anthropic")] == ["QuotaExhausted"]
    assert len(server.requests_for("claude-haiku-4-5")) == 1  # parked after the quota error
    assert sum(c["outcome"] == "ok" for c in calls) == 5


@needs_openai
def test_a_request_rejected_for_good_fails_one_node_not_the_run(server, point_at, sleeps, tmp_path):
    point_at("openai")
    server.script("gpt-4.1", reply(FULL), server_error(400), reply(FULL), reply(FULL), reply(FULL))
    agent, _run_dir = _run(tmp_path, ["openai/gpt-4.1"], sleeps, **{"budget.iterations": 4})
    statuses = [n.status for n in agent.session.state.graph]
    assert statuses == ["scored", "llm_error", "scored", "scored"], statuses
    assert "HTTP 400" in agent.session.state.graph["n0002"].failure
