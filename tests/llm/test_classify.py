"""Recorded provider error replies and how each one is classified (pure functions, real fixtures)."""

from __future__ import annotations

import email.utils
import json
import time

import pytest

from mlguild.llm import AuthError, InvalidRequest, QuotaExhausted, RateLimited, TransientError, normalise_finish_reason
from mlguild.llm.classify import classify_status, retry_after_seconds

from .servers import FIXTURES


@pytest.mark.parametrize(
    "name, expected",
    [
        ("openai_quota", QuotaExhausted),  # insufficient_quota: billing, waiting cannot help
        ("openai_rate_limit", RateLimited),  # requests per min
        ("openai_rpd", QuotaExhausted),  # requests per day
        ("openai_auth", AuthError),
        ("anthropic_quota", QuotaExhausted),  # credit balance too low (a 400)
        ("anthropic_rate_limit", RateLimited),
        ("anthropic_auth", AuthError),
        ("anthropic_overloaded", TransientError),
        ("gemini_quota", QuotaExhausted),  # GenerateRequestsPerDay...: park this model
        ("gemini_rate_limit", RateLimited),  # GenerateRequestsPerMinute..., despite "billing" in the text
        ("gemini_auth", AuthError),  # a 400 API_KEY_INVALID
    ],
)
def test_recorded_errors_classify(name, expected):
    fx = json.loads((FIXTURES / f"{name}.json").read_text())
    err = classify_status(fx["status"], json.dumps(fx["body"]), fx["headers"], model="p/m", key_env="P_KEY")
    assert type(err) is expected
    assert err.model == "p/m" and err.fix


def test_gemini_quota_message_names_the_window():
    fx = json.loads((FIXTURES / "gemini_quota.json").read_text())
    err = classify_status(429, json.dumps(fx["body"]), {}, model="gemini/gemini-2.5-flash")
    assert "GenerateRequestsPerDayPerProjectPerModel-FreeTier" in err.message[:200]


@pytest.mark.parametrize(
    "status, cls",
    [
        (500, TransientError),
        (502, TransientError),
        (529, TransientError),
        (408, TransientError),
        (404, InvalidRequest),
        (400, InvalidRequest),
        (403, AuthError),
        (402, QuotaExhausted),
        (429, RateLimited),
    ],
)
def test_status_codes(status, cls):
    assert type(classify_status(status, "{}", {}, model="p/m")) is cls


def test_auth_error_for_a_local_server_has_a_fix_without_a_variable():
    err = classify_status(401, "{}", {}, model="vllm/x", key_env=None)
    assert "local server" in err.fix


def test_retry_after_forms():
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds({"Retry-After": when}) <= 31
    assert retry_after_seconds({}, '{"retryDelay": "34s"}') == 34.0
    assert retry_after_seconds({}, "Please try again in 7m12s.") == 432.0
    assert retry_after_seconds({}, "Please retry in 9h51m2.5s.") == pytest.approx(35462.5)
    assert retry_after_seconds({}, "Please try again in 120ms.") == pytest.approx(0.12)
    assert retry_after_seconds({}, "no advice") is None
    assert retry_after_seconds({"Retry-After": "soon"}) is None


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("stop", "stop"),
        ("length", "length"),
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("FinishReason.MAX_TOKENS", "length"),
        (None, "unknown"),
        ("content_filter", "content_filter"),
        ("SAFETY", "safety"),
        ("stop_sequence", "stop"),
    ],
)
def test_finish_reasons_normalise(raw, expected):
    assert normalise_finish_reason(raw) == expected
