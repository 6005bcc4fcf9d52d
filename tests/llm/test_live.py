"""Opt-in smoke test against real provider APIs (CONTRIBUTING.md: live-API tests need an explicit flag).

    MLGUILD_LIVE_MODELS=anthropic/claude-haiku-4-5,gemini/gemini-2.5-flash \\
        .venv/bin/python -m pytest tests/llm/test_live.py

Each model gets one tiny request through make_llm, with its real key and endpoint: it checks
that the parameters we send are still accepted and that replies parse. Costs a fraction of a cent.
"""

from __future__ import annotations

import os

import pytest

from mlguild.llm import Message, make_llm

MODELS = [m.strip() for m in os.environ.get("MLGUILD_LIVE_MODELS", "").split(",") if m.strip()]


@pytest.fixture(autouse=True)
def _clean_llm_env():
    # Overrides the suite's env scrubbing: a live test needs the developer's real keys.
    yield


@pytest.mark.skipif(not MODELS, reason="set MLGUILD_LIVE_MODELS=provider/model,... to call real APIs")
@pytest.mark.parametrize("model", MODELS or ["none"])
def test_live_model_answers(model):
    reply = make_llm(model).complete(
        [Message("system", "Answer with one word."), Message("user", "Say hello.")], max_tokens=256, timeout_s=60
    )
    assert reply.model == model and reply.input_tokens > 0
    assert reply.text.strip() or reply.finish_reason == "length"
