"""Ledger totals and resume, prices, the reply cache's files, and the scripted LLM."""

from __future__ import annotations

import json

import pytest

from mlguild.llm import Completion, Ledger, Message, QuotaExhausted, ReplyCache, Router, ScriptedLLM, cache_key
from mlguild.llm.prices import cost_usd, price_of

MSGS = [Message("system", "s"), Message("user", "u")]


def _rec(model="openai/gpt-4.1", outcome="ok", tokens=(100, 50), cost=0.001):
    return Ledger.make_record(
        model, outcome=outcome, attempt=1, input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost
    )


def test_ledger_totals_per_model_and_sink():
    seen: list[dict] = []
    ledger = Ledger(sink=seen.append)
    ledger(_rec())
    ledger.record(_rec(outcome="RateLimited", tokens=(0, 0), cost=0))
    ledger.record(_rec(outcome="cache_hit"))
    ledger.record(_rec(model="ollama/llama3", cost=0))
    t = ledger.by_model["openai/gpt-4.1"]
    assert (t.calls, t.ok, t.failed, t.cache_hits, t.input_tokens, t.output_tokens) == (2, 1, 1, 1, 100, 50)
    assert ledger.total_tokens == 300 and ledger.total_cost_usd == pytest.approx(0.001)
    assert len(seen) == 4 and ledger.cost_known
    assert "openai/gpt-4.1: 2 calls (1 failed, 1 cached)" in ledger.summary()


def test_unknown_price_is_zero_and_marked():
    rec = _rec(model="openrouter/some/model", cost=0)
    assert rec["cost_known"] is False
    ledger = Ledger.from_records([rec])
    assert not ledger.cost_known and "price unknown" in ledger.summary()


def test_from_records_skips_other_journal_types_and_does_not_resend():
    seen: list[dict] = []
    records = [{"type": "node", "id": "n1"}, {"type": "llm_call", "seq": 3, **_rec()}, _rec(tokens=(1, 1))]
    ledger = Ledger.from_records(records, sink=seen.append)
    assert ledger.total_tokens == 152 and seen == []


def test_prices():
    assert price_of("openai/gpt-4.1") == (2.0, 8.0)
    assert price_of("openai/gpt-4.1-mini-2025-04-14") == (0.4, 1.6)  # dated variant, longest prefix
    assert price_of("gemini-openai/gemini-2.5-flash") == price_of("gemini/gemini-2.5-flash")
    assert price_of("anthropic/claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert price_of("openai/gpt-5.5") is None  # not silently priced as gpt-5
    assert price_of("vllm/anything") == (0.0, 0.0)
    assert cost_usd("anthropic/claude-haiku-4-5", 1_000_000, 1_000_000) == (6.0, True)
    assert cost_usd("mystery/model", 10, 10) == (0.0, False)


def test_cache_round_trip_is_atomic_and_readable(tmp_path):
    cache = ReplyCache(tmp_path / "c")
    done = Completion("code", "openai/gpt-4.1", "length", 10, 20, cost_usd=0.5, latency_s=3.0)
    path = cache.put(MSGS, 100, 0.2, done)
    assert path.name == cache_key("openai/gpt-4.1", MSGS, 100, 0.2) + ".json"
    assert not list(path.parent.glob(".tmp-*"))  # the temp file was renamed, not left behind
    entry = json.loads(path.read_text())
    assert entry["request"]["messages"][1] == {"role": "user", "content": "u"}  # a human can read it
    hit = cache.get("openai/gpt-4.1", MSGS, 100, 0.2)
    assert hit == Completion("code", "openai/gpt-4.1", "length", 10, 20, cost_usd=0.0, latency_s=0.0, cached=True)
    assert cache.get("openai/gpt-4.1", MSGS, 100, 0.3) is None
    assert cache.get("openai/gpt-4.1-mini", MSGS, 100, 0.2) is None
    assert len(cache) == 1


def test_a_corrupt_cache_entry_is_a_miss_not_an_error(tmp_path):
    cache = ReplyCache(tmp_path)
    path = cache.put(MSGS, 100, 0.2, Completion("x", "p/m", "stop"))
    path.write_text("{torn")
    assert cache.get("p/m", MSGS, 100, 0.2) is None


def test_cache_key_depends_on_every_request_field():
    base = cache_key("p/m", MSGS, 100, 0.2)
    assert base == cache_key("p/m", list(MSGS), 100, 0.2)
    assert (
        len(
            {
                base,
                cache_key("p/n", MSGS, 100, 0.2),
                cache_key("p/m", MSGS[1:], 100, 0.2),
                cache_key("p/m", MSGS, 101, 0.2),
                cache_key("p/m", MSGS, 100, 0.0),
                cache_key("p/m", [Message("user", "s"), Message("user", "u")], 100, 0.2),
                cache_key("p/m", MSGS, 100, 0.2, node="n0007"),
            }
        )
        == 7
    )


def test_the_cache_answers_the_resume_of_the_node_that_asked_and_no_other(tmp_path):
    llm = ScriptedLLM(["first reply", "second reply"], model="scripted/a")
    router = Router([llm], cache=ReplyCache(tmp_path / "cache"), sleep=lambda s: None)
    assert router.complete(MSGS, max_tokens=10, purpose="improve", node="n0004").text == "first reply"
    # Another node with the very same prompt is asked afresh: a cached reply would rerun a script.
    assert router.complete(MSGS, max_tokens=10, purpose="improve", node="n0005").text == "second reply"
    # The resume of n0004 (after a kill) gets its own reply back, free.
    again = router.complete(MSGS, max_tokens=10, purpose="improve", node="n0004")
    assert again.text == "first reply" and again.cached and len(llm.calls) == 2


def test_scripted_llm_drives_the_router_offline():
    a = ScriptedLLM([QuotaExhausted("daily quota", model="scripted/a")], model="scripted/a")
    b = ScriptedLLM(["plan: use lightgbm"], model="scripted/b")
    router = Router([a, b], sleep=lambda s: None)
    assert router.complete(MSGS, max_tokens=10, purpose="draft").text == "plan: use lightgbm"
    assert router.parked.keys() == {"scripted/a"} and b.calls[0]["purpose"] == "draft"
