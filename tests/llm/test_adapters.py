"""Each adapter, through its real SDK, against the local server speaking that provider's wire format."""

from __future__ import annotations

import time

import pytest

from mlguild.llm import (
    AuthError,
    BadResponse,
    Ledger,
    LLMTimeout,
    Message,
    QuotaExhausted,
    RateLimited,
    Router,
    TransientError,
    make_llm,
)

from .sdks import needs_anthropic, needs_gemini, needs_openai
from .servers import auth_error, empty, malformed, quota, rate_limited, reply, reset, server_error, slow, truncated

# provider, full model string, the name the server sees
CASES = [
    pytest.param(("openai", "openai/gpt-4.1", "gpt-4.1"), marks=needs_openai, id="openai"),
    pytest.param(
        ("anthropic", "anthropic/claude-haiku-4-5", "claude-haiku-4-5"), marks=needs_anthropic, id="anthropic"
    ),
    pytest.param(("gemini", "gemini/gemini-2.5-flash", "gemini-2.5-flash"), marks=needs_gemini, id="gemini"),
]
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
PROMPT = [Message("system", "You write Python."), Message("user", "Train a model.")]


@pytest.fixture(params=CASES)
def case(request, point_at):
    provider, model, name = request.param
    point_at(provider)
    return provider, model, name


def _system_and_cap(provider: str, body: dict) -> tuple[str, int]:
    """Where each wire format carries the system prompt and the output cap."""
    if provider == "openai":
        assert body["messages"][0] == {"role": "system", "content": "You write Python."}
        return body["messages"][0]["content"], body["max_completion_tokens"]
    if provider == "anthropic":
        assert [m["role"] for m in body["messages"]] == ["user"]  # system lifted out of the turns
        (block,) = body["system"]
        assert block["cache_control"] == {"type": "ephemeral"}  # the run's shared prefix, cached
        return block["text"], body["max_tokens"]
    assert [c["role"] for c in body["contents"]] == ["user"]
    return body["systemInstruction"]["parts"][0]["text"], body["generationConfig"]["maxOutputTokens"]


def test_normal_reply(case, server):
    provider, model, name = case
    server.script(name, reply("print('hi')", tokens_in=1000, tokens_out=200))
    llm = make_llm(model)
    c = llm.complete(PROMPT, max_tokens=321, temperature=0.1, timeout_s=10)
    assert (c.text, c.model, c.finish_reason, c.truncated, c.cached) == ("print('hi')", model, "stop", False, False)
    assert (c.input_tokens, c.output_tokens) == (1000, 200)
    assert c.cost_usd > 0 and 0 < c.latency_s < 10  # measured around the real request
    (seen,) = server.requests_for(name)
    system, cap = _system_and_cap(provider, seen.body)
    assert (system, cap) == ("You write Python.", 321)
    if provider == "gemini":
        assert seen.path == f"/v1beta/models/{name}:generateContent"
        assert seen.headers.get("x-goog-api-key") == "test-key"
    else:
        assert seen.body["model"] == name


def test_prompt_cache_reads_are_counted(case, server):
    """Each provider reports prompt-cache reads in its own field; all land in one place, and the
    ledger's totals and status line show them."""
    _, model, name = case
    server.script(name, reply("ok", tokens_in=1000, tokens_out=20, cache_read=800))
    ledger = Ledger(sink=[].append)
    c = Router([make_llm(model)], seed=0, ledger=ledger).complete(PROMPT, max_tokens=64, timeout_s=10)
    assert (c.input_tokens, c.prompt_cache_tokens) == (1000, 800)
    assert ledger.by_model[model].prompt_cache_tokens == 800
    assert "1,000 in (800 from the prompt cache)" in ledger.summary()


@needs_anthropic
def test_anthropic_prompt_cache_writes_are_counted_apart(server, point_at):
    """Anthropic reports the tokens it wrote into its prompt cache in their own field: they are
    input tokens (the budget counts them) and the ledger keeps them apart from the reads."""
    point_at("anthropic")
    model = "anthropic/claude-haiku-4-5"
    server.script("claude-haiku-4-5", reply("ok", tokens_in=1000, tokens_out=20, cache_read=0, cache_write=900))
    ledger = Ledger(sink=[].append)
    c = Router([make_llm(model)], seed=0, ledger=ledger).complete(PROMPT, max_tokens=64, timeout_s=10)
    assert (c.input_tokens, c.prompt_cache_tokens, c.prompt_cache_write_tokens) == (1000, 0, 900)
    totals = ledger.by_model[model]
    assert (totals.prompt_cache_tokens, totals.prompt_cache_write_tokens) == (0, 900)
    assert "1,000 in (900 written to the prompt cache)" in ledger.summary()
    assert ledger.by_purpose["other"].input_tokens == 1000  # no purpose given: counted as "other"


def test_truncated_reply_is_length(case, server):
    _, model, name = case
    server.script(name, truncated("def train(:\n    x = "))
    c = make_llm(model).complete(PROMPT, max_tokens=8, timeout_s=10)
    assert c.finish_reason == "length" and c.truncated
    assert c.text.startswith("def train(")


def test_rate_limit_waits_the_advertised_retry_after(case, server, sleeps):
    _, model, name = case
    server.script(name, rate_limited(retry_after=7), reply("after the wait"))
    router = Router([make_llm(model)], sleep=sleeps, seed=0, ledger=Ledger(sink=[].append))
    c = router.complete(PROMPT, max_tokens=64, timeout_s=10)
    assert c.text == "after the wait"
    assert sleeps == [7.0]
    assert [r["outcome"] for r in _records(router)] == ["RateLimited", "ok"]
    assert len(server.requests_for(name)) == 2  # the SDK itself did not retry


def test_server_error_is_retried_then_succeeds(case, server, sleeps):
    _, model, name = case
    server.script(name, server_error(500), server_error(503), reply("third time"))
    router = Router([make_llm(model)], sleep=sleeps, backoff_base_s=2.0, seed=1, ledger=Ledger(sink=[].append))
    assert router.complete(PROMPT, max_tokens=64, timeout_s=10).text == "third time"
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 2.0 and 0 <= sleeps[1] <= 4.0
    assert [r["outcome"] for r in _records(router)] == ["TransientError", "TransientError", "ok"]
    assert len(server.requests_for(name)) == 3


def test_malformed_json_is_bad_response(case, server):
    _, model, name = case
    server.script(name, malformed())
    with pytest.raises(BadResponse):
        make_llm(model).complete(PROMPT, max_tokens=64, timeout_s=10)


def test_empty_content_is_bad_response(case, server):
    _, model, name = case
    server.script(name, empty())
    with pytest.raises(BadResponse, match="empty content"):
        make_llm(model).complete(PROMPT, max_tokens=64, timeout_s=10)


def test_bad_responses_are_retried_a_couple_of_times_then_fail(case, server, sleeps):
    _, model, name = case
    server.script(name, malformed(), malformed(), malformed(), reply("never reached"))
    router = Router([make_llm(model)], sleep=sleeps, bad_response_retries=2)
    with pytest.raises(BadResponse):
        router.complete(PROMPT, max_tokens=64, timeout_s=10)
    assert len(server.requests_for(name)) == 3


def test_slow_reply_times_out_within_the_timeout(case, server):
    _, model, name = case
    server.script(name, slow(delay_s=10))
    llm = make_llm(model)
    started = time.monotonic()
    with pytest.raises(LLMTimeout):
        llm.complete(PROMPT, max_tokens=64, timeout_s=0.4)
    assert time.monotonic() - started < 3.0


def test_connection_reset_is_transient(case, server):
    _, model, name = case
    server.script(name, reset())
    with pytest.raises(TransientError):
        make_llm(model).complete(PROMPT, max_tokens=64, timeout_s=10)


def test_refused_key_is_auth_error_naming_the_variable(case, server, sleeps):
    provider, model, name = case
    server.script(name, auth_error())
    router = Router([make_llm(model)], sleep=sleeps)
    with pytest.raises(AuthError) as info:
        router.complete(PROMPT, max_tokens=64, timeout_s=10)
    assert KEY_ENV[provider] in info.value.fix
    assert KEY_ENV[provider] in str(info.value)  # the terminal shows the fix
    assert sleeps == [] and len(server.requests_for(name)) == 1  # no retry of a refused key


def test_quota_reply_is_quota_exhausted(case, server):
    _, model, name = case
    server.script(name, quota())
    with pytest.raises(QuotaExhausted) as info:
        make_llm(model).complete(PROMPT, max_tokens=64, timeout_s=10)
    assert info.value.model == model


def test_rate_limit_fixture_is_rate_limited_with_retry_after(case, server):
    _, model, name = case
    server.script(name, rate_limited(retry_after=None))  # only what the recorded reply says
    with pytest.raises(RateLimited) as info:
        make_llm(model).complete(PROMPT, max_tokens=64, timeout_s=10)
    # OpenAI and Anthropic send a retry-after header; Gemini only its body's RetryInfo (34s).
    expected = {"openai": 20.0, "anthropic": 15.0, "gemini": 34.0}[case[0]]
    assert info.value.retry_after_s == expected


@needs_openai
def test_local_openai_compatible_server_needs_no_key(server, monkeypatch):
    monkeypatch.setenv("MLGUILD_OLLAMA_BASE_URL", server.url + "/v1")
    server.script("qwen2.5-coder:14b", reply("local"))
    c = make_llm("ollama/qwen2.5-coder:14b").complete(PROMPT, max_tokens=50)
    assert (c.text, c.cost_usd) == ("local", 0.0)
    (seen,) = server.requests_for("qwen2.5-coder:14b")
    assert seen.body["max_tokens"] == 50 and "max_completion_tokens" not in seen.body
    assert seen.body["temperature"] == 0.2


@needs_openai
def test_openai_reasoning_models_get_no_temperature(server, point_at):
    point_at("openai")
    make_llm("openai/o4-mini").complete(PROMPT, max_tokens=50, temperature=0.7)
    (seen,) = server.requests_for("o4-mini")
    assert "temperature" not in seen.body and seen.body["max_completion_tokens"] == 50


def _records(router: Router) -> list[dict]:
    return router.ledger.sink.__self__  # the list whose append is the sink
