"""The Router over real adapters and the local server: fallback, quota parking, budgets, ledger, cache."""

from __future__ import annotations

import pytest

from mlguild.config.llm import LLMConfig
from mlguild.core.errors import BudgetExhausted
from mlguild.llm import (
    AllModelsExhausted,
    AuthError,
    Ledger,
    Message,
    QuotaExhausted,
    ReplyCache,
    Router,
    TransientError,
    make_llm,
)
from mlguild.llm.router import build_router
from mlguild.rundir.journal import Journal, read_journal

from .sdks import needs_anthropic, needs_gemini, needs_openai
from .servers import auth_error, quota, rate_limited, reply, server_error

PROMPT = [Message("system", "You write Python."), Message("user", "Train a model.")]
pytestmark = needs_openai


@pytest.fixture
def openai_env(point_at):
    point_at("openai")


def _router(models, sleeps, records=None, **kw):
    if records is not None:
        kw["ledger"] = Ledger(sink=records.append)
    return Router([make_llm(m) for m in models], sleep=sleeps, seed=0, **kw)


@needs_anthropic
@needs_gemini
def test_quota_on_one_model_parks_it_and_the_next_serves_the_rest_of_the_run(server, point_at, sleeps):
    point_at("anthropic")
    point_at("gemini")
    server.script("claude-haiku-4-5", quota())
    records: list[dict] = []
    router = _router(["anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"], sleeps, records)
    texts = [router.complete(PROMPT, max_tokens=64, purpose="draft", node=f"n{i}").text for i in range(3)]
    assert texts == ["reply from gemini-2.5-flash"] * 3
    assert len(server.requests_for("claude-haiku-4-5")) == 1  # parked: never asked again
    assert len(server.requests_for("gemini-2.5-flash")) == 3
    assert list(router.parked) == ["anthropic/claude-haiku-4-5"]
    assert router.model == "gemini/gemini-2.5-flash"
    assert sleeps == []  # waiting cannot fix a quota, so nothing waited
    assert [(r["model"], r["outcome"]) for r in records[:2]] == [
        ("anthropic/claude-haiku-4-5", "QuotaExhausted"),
        ("gemini/gemini-2.5-flash", "ok"),
    ]


def test_every_model_quota_exhausted_stops_with_all_models_exhausted(server, openai_env, sleeps):
    server.script("gpt-4.1", quota())
    server.script("gpt-4.1-mini", quota())
    router = _router(["openai/gpt-4.1", "openai/gpt-4.1-mini"], sleeps)
    with pytest.raises(AllModelsExhausted) as info:
        router.complete(PROMPT, max_tokens=64)
    err = info.value
    assert set(err.parked) == {"openai/gpt-4.1", "openai/gpt-4.1-mini"}
    assert "insufficient_quota" in err.parked["openai/gpt-4.1"]  # says why
    assert err.retry_in_s is None and err.fix and "mlguild resume" in err.fix
    assert isinstance(err.__cause__, QuotaExhausted)
    with pytest.raises(AllModelsExhausted):  # and stays stopped without another request
        router.complete(PROMPT, max_tokens=64)
    assert len(server.requests) == 2


def test_a_timed_park_ends_and_the_model_is_tried_again(server, openai_env, sleeps, clock):
    server.script("gpt-4.1", quota())
    router = _router(["openai/gpt-4.1", "openai/gpt-4.1-mini"], sleeps, park_s=600, clock=clock)
    assert router.complete(PROMPT, max_tokens=64).model == "openai/gpt-4.1-mini"
    clock.advance(599)
    assert router.complete(PROMPT, max_tokens=64).model == "openai/gpt-4.1-mini"
    clock.advance(2)
    assert router.complete(PROMPT, max_tokens=64).model == "openai/gpt-4.1"


def test_all_parked_for_a_time_reports_when_to_come_back(server, openai_env, sleeps, clock):
    server.script("gpt-4.1", quota())
    router = _router(["openai/gpt-4.1"], sleeps, park_s=3600, clock=clock)
    with pytest.raises(AllModelsExhausted) as info:
        router.complete(PROMPT, max_tokens=64)
    assert info.value.retry_in_s == pytest.approx(3600)


def test_a_model_out_of_retries_falls_back_without_being_parked(server, openai_env, sleeps):
    server.script("gpt-4.1", *[server_error(500)] * 3)
    router = _router(["openai/gpt-4.1", "openai/gpt-4.1-mini"], sleeps, retries=2)
    assert router.complete(PROMPT, max_tokens=64).model == "openai/gpt-4.1-mini"
    assert router.parked == {} and len(sleeps) == 2
    assert router.complete(PROMPT, max_tokens=64).model == "openai/gpt-4.1"  # healthy again next call


def test_when_every_model_fails_transiently_the_last_error_is_raised(server, openai_env, sleeps):
    server.script("gpt-4.1", *[server_error(502)] * 2)
    router = _router(["openai/gpt-4.1"], sleeps, retries=1)
    with pytest.raises(TransientError):
        router.complete(PROMPT, max_tokens=64)


def test_auth_error_stops_at_once_without_falling_back(server, openai_env, sleeps):
    server.script("gpt-4.1", auth_error())
    router = _router(["openai/gpt-4.1", "openai/gpt-4.1-mini"], sleeps)
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        router.complete(PROMPT, max_tokens=64)
    assert server.requests_for("gpt-4.1-mini") == []


def test_retry_after_is_capped(server, openai_env, sleeps):
    server.script("gpt-4.1", rate_limited(retry_after=3600))
    router = _router(["openai/gpt-4.1"], sleeps, retry_after_cap_s=90)
    router.complete(PROMPT, max_tokens=64)
    assert sleeps == [90]


def test_backoff_is_exponential_with_full_jitter_and_seeded(server, openai_env):
    waits = []
    for _ in range(2):
        server.script("gpt-4.1", *[server_error(500)] * 4)
        sleeps: list[float] = []
        Router(
            [make_llm("openai/gpt-4.1")], sleep=sleeps.append, seed=7, retries=4, backoff_base_s=1.0, backoff_cap_s=5.0
        ).complete(PROMPT, max_tokens=64)
        assert all(0 <= s <= ceiling for s, ceiling in zip(sleeps, [1, 2, 4, 5]))
        waits.append(sleeps)
    assert waits[0] == waits[1] and len(waits[0]) == 4


def test_ledger_gets_one_record_per_attempt_with_labels(server, openai_env, sleeps, tmp_path):
    server.script(
        "gpt-4.1", server_error(500), rate_limited(retry_after=3), reply("ok", tokens_in=1000, tokens_out=500)
    )
    with Journal(tmp_path / "journal.jsonl") as journal:
        ledger = Ledger(sink=lambda rec: journal.append("llm_call", **rec))
        router = Router([make_llm("openai/gpt-4.1")], sleep=sleeps, ledger=ledger)
        router.complete(PROMPT, max_tokens=64, purpose="improve", node="n0007")
    records = [r for r in read_journal(tmp_path / "journal.jsonl") if r["type"] == "llm_call"]
    assert [(r["attempt"], r["outcome"]) for r in records] == [(1, "TransientError"), (2, "RateLimited"), (3, "ok")]
    assert {(r["purpose"], r["node"], r["model"]) for r in records} == {("improve", "n0007", "openai/gpt-4.1")}
    ok = records[-1]
    assert (ok["input_tokens"], ok["output_tokens"], ok["finish_reason"]) == (1000, 500, "stop")
    assert ok["cost_usd"] == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6) and ok["cost_known"] is True
    assert "HTTP 500" in records[0]["error"]
    totals = ledger.by_model["openai/gpt-4.1"]
    assert (totals.calls, totals.ok, totals.failed) == (3, 1, 2)


def test_token_budget(server, openai_env, sleeps):
    server.script("gpt-4.1", reply("a", tokens_in=100, tokens_out=50), reply("b", tokens_in=100, tokens_out=50))
    router = _router(["openai/gpt-4.1"], sleeps, max_tokens_total=200)
    router.complete(PROMPT, max_tokens=64)  # 150 spent
    router.complete(PROMPT + [Message("user", "again")], max_tokens=64)  # crosses 200: still returned
    with pytest.raises(BudgetExhausted) as info:
        router.complete(PROMPT, max_tokens=64)
    assert info.value.which == "llm_tokens"
    assert len(server.requests) == 2


def test_cost_budget_survives_a_resume(server, openai_env, sleeps, tmp_path):
    server.script("gpt-4.1", reply("a", tokens_in=1_000_000, tokens_out=0))  # $2.00
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        journal.append("node", id="n0001")  # other record types are ignored by the ledger
        ledger = Ledger(sink=lambda rec: journal.append("llm_call", **rec))
        _router(["openai/gpt-4.1"], sleeps, ledger=ledger, max_cost_usd=5.0).complete(PROMPT, max_tokens=64)
    # A new process: the ledger is rebuilt from the journal, so the $2 already spent counts.
    resumed = Ledger.from_records(read_journal(path))
    assert resumed.total_cost_usd == pytest.approx(2.0)
    with pytest.raises(BudgetExhausted) as info:
        _router(["openai/gpt-4.1"], sleeps, ledger=resumed, max_cost_usd=1.5).complete(PROMPT, max_tokens=64)
    assert info.value.which == "llm_cost"
    assert len(server.requests) == 1


def test_identical_call_is_served_from_the_cache(server, openai_env, sleeps, tmp_path):
    records: list[dict] = []
    router = _router(["openai/gpt-4.1"], sleeps, records, cache=ReplyCache(tmp_path / "llm_cache"))
    first = router.complete(PROMPT, max_tokens=64, purpose="draft", node="n1")
    second = router.complete(PROMPT, max_tokens=64, purpose="draft", node="n1")
    assert len(server.requests) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text and second.cost_usd == 0.0 and first.cost_usd > 0
    assert [r["outcome"] for r in records] == ["ok", "cache_hit"]
    assert router.ledger.by_model["openai/gpt-4.1"].cache_hits == 1
    assert router.ledger.total_tokens == first.input_tokens + first.output_tokens  # not paid twice
    router.complete(PROMPT, max_tokens=65)  # a different request is a miss
    assert len(server.requests) == 2


def test_cache_is_shared_by_a_resumed_router_and_covers_the_fallback_model(server, point_at, sleeps, tmp_path):
    point_at("openai")
    server.script("gpt-4.1", quota())
    chain = ["openai/gpt-4.1", "openai/gpt-4.1-mini"]
    cache_dir = tmp_path / "run" / "llm_cache"
    answered = _router(chain, sleeps, cache=ReplyCache(cache_dir)).complete(PROMPT, max_tokens=64)
    assert answered.model == "openai/gpt-4.1-mini"
    before = len(server.requests)
    # Resume: a new Router (gpt-4.1 no longer parked) finds the fallback's reply without asking anyone.
    again = _router(chain, sleeps, cache=ReplyCache(cache_dir)).complete(PROMPT, max_tokens=64)
    assert again.cached and again.text == answered.text and len(server.requests) == before


def test_build_router_wires_config_journal_cache_and_resume(server, openai_env, sleeps, tmp_path):
    config = LLMConfig(models=["openai/gpt-4.1", "openai/gpt-4.1-mini"], max_cost_usd=10.0)
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        router = build_router(
            config, run_dir=tmp_path, sink=lambda rec: journal.append("llm_call", **rec), sleep=sleeps
        )
        router.complete(PROMPT, max_tokens=config.max_tokens)
    assert (tmp_path / "llm_cache").is_dir()
    with Journal(path) as journal:
        resumed = build_router(
            config,
            run_dir=tmp_path,
            records=journal.records,
            sink=lambda rec: journal.append("llm_call", **rec),
            sleep=sleeps,
        )
        assert resumed.ledger.by_model["openai/gpt-4.1"].ok == 1
        assert resumed.complete(PROMPT, max_tokens=config.max_tokens).cached
    assert len(server.requests) == 1
    assert [r["outcome"] for r in read_journal(path)] == ["ok", "cache_hit"]
