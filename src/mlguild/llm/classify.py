"""Map what a provider said (HTTP status, headers, body) to the LLM error taxonomy.

One function for all providers because the hard part is the same everywhere: telling a
per-minute rate limit (wait a little) from a daily/monthly quota or billing stop (park the
model). Providers use 429 for both; only the wording differs, e.g. Gemini's quotaId
``GenerateRequestsPerDayPerProjectPerModel`` vs ``...PerMinute...``, and OpenAI's
"requests per day (RPD)" vs "per min (RPM)" vs ``insufficient_quota``.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from .errors import (
    AuthError,
    BadResponse,
    InvalidRequest,
    LLMError,
    LLMTimeout,
    QuotaExhausted,
    RateLimited,
    TransientError,
)

# A long window: waiting Retry-After's few seconds cannot help, so the model is parked.
_LONG_WINDOW = re.compile(r"per[\s_-]?day|perday|daily|\bRPD\b|per[\s_-]?month|permonth|monthly", re.IGNORECASE)
# A short window: waiting a little does help. Checked after _LONG_WINDOW on purpose: a body
# naming both windows is only fixed by the long one.
_SHORT_WINDOW = re.compile(r"per[\s_-]?minute|perminute|per min\b|\bRPM\b|\bTPM\b|per[\s_-]?second", re.IGNORECASE)
# Billing / plan exhaustion with no window named: no amount of waiting helps.
_BILLING = re.compile(
    r"insufficient_quota|credit balance|billing_hard_limit|exceeded your current quota"
    r"|payment required|spend limit|out of credits",
    re.IGNORECASE,
)
_BAD_KEY = re.compile(
    r"api key not valid|api_key_invalid|invalid[_ ]api[_ ]key|invalid x-api-key"
    r"|incorrect api key|authentication_error|unauthenticated",
    re.IGNORECASE,
)

_QUOTA_ID = re.compile(r'"quotaId"\s*:\s*"([^"]+)"')
_DELAY_IN_BODY = [
    # Gemini's RetryInfo detail
    re.compile(r'"retryDelay"\s*:\s*"([\d.]+)s"'),
    # OpenAI's and Gemini's prose: "try again in 20s", "7m12s", "9h51m2.5s", "120ms"
    re.compile(r"(?:retry|try again) in (?:(\d+)h)?(?:(\d+)m)?([\d.]+)(ms|s)\b", re.IGNORECASE),
]


def retry_after_seconds(headers: Mapping[str, str] | None, body: str = "") -> float | None:
    """The server's advised wait in seconds: ``retry-after-ms``, ``retry-after`` (seconds or an
    HTTP date), or a delay written in the error body. None when the server gave no advice."""
    lower = {k.lower(): v for k, v in (headers or {}).items()}
    try:
        return max(0.0, float(lower["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    value = lower.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                pass  # neither seconds nor a date: fall through to the body
    match = _DELAY_IN_BODY[0].search(body)
    if match:
        return float(match.group(1))
    match = _DELAY_IN_BODY[1].search(body)
    if match:
        hours, minutes, amount, unit = match.groups()
        seconds = float(amount) / (1000 if unit == "ms" else 1)
        return seconds + 60 * int(minutes or 0) + 3600 * int(hours or 0)
    return None


def classify_status(
    status: int, body: str, headers: Mapping[str, str] | None, *, model: str, key_env: str | None = None
) -> LLMError:
    """The taxonomy member for an HTTP error reply. ``key_env`` names the variable holding the
    key, so an AuthError's fix says exactly what to change."""
    said = f"HTTP {status}: {summarise_body(body)}"
    if status in (401, 403) or (status == 400 and _BAD_KEY.search(body)):
        fix = (
            f"set a valid key: export {key_env}=... (or choose another --model)"
            if key_env
            else "check the API key the local server expects (or choose another --model)"
        )
        return AuthError(f"{model}: the API key was refused ({said})", fix, model=model)
    if status == 402 or (status in (400, 429) and _BILLING.search(body) and not _SHORT_WINDOW.search(body)):
        return _quota(model, said)
    if status == 429 or "RESOURCE_EXHAUSTED" in body:
        if _LONG_WINDOW.search(body):
            return _quota(model, said)
        return RateLimited(
            f"{model}: rate limited ({said})",
            "wait, or lower the number of parallel workers",
            model=model,
            retry_after_s=retry_after_seconds(headers, body),
        )
    if status in (408, 409, 425) or status >= 500:
        return TransientError(
            f"{model}: service error ({said})", "usually heals by itself; check the provider's status page", model=model
        )
    if status == 404:
        return InvalidRequest(
            f"{model}: model or endpoint not found ({said})",
            "check the model name: --model provider/name (e.g. openai/gpt-4.1)",
            model=model,
        )
    return InvalidRequest(
        f"{model}: request rejected ({said})",
        "the prompt or a parameter is not accepted by this model; try another --model",
        model=model,
    )


def summarise_body(body: str) -> str:
    """The provider's own code and message from an error body, plus any quota ids (they say
    which window ran out), in one short line."""
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body.split())[:300]
    error = data.get("error", data) if isinstance(data, dict) else data
    if not isinstance(error, dict):
        return " ".join(str(error).split())[:300]
    code = error.get("code") if isinstance(error.get("code"), str) else None
    kind = code or error.get("status") or error.get("type") or ""
    message = " ".join(str(error.get("message", "")).split())[:240]
    quota_ids = _QUOTA_ID.findall(body)
    if quota_ids:  # first, so a truncated line still says which window ran out
        kind = f"{kind} [{', '.join(dict.fromkeys(quota_ids))}]".strip()
    return f"{kind}: {message}" if kind else message


def _quota(model: str, said: str) -> QuotaExhausted:
    return QuotaExhausted(
        f"{model}: quota exhausted ({said})",
        "this model is parked for the run; add another model to the chain or raise the quota",
        model=model,
    )


def classify_transport(exc: BaseException, *, model: str) -> LLMError | None:
    """The taxonomy member for a failure below HTTP (timeout, refused or reset connection), or
    None if ``exc`` is not one. Matched by class name along the MRO, so httpx, httpx2 and
    requests exceptions all map without importing any of them."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"TimeoutException", "APITimeoutError", "Timeout", "TimeoutError", "ReadTimeout"}:
        return LLMTimeout(
            f"{model}: no reply within the timeout ({exc})",
            "raise the LLM timeout, or check that the server is not overloaded",
            model=model,
        )
    if names & {
        "TransportError",
        "NetworkError",
        "APIConnectionError",
        "ConnectionError",
        "RemoteProtocolError",
        "ProtocolError",
        "ChunkedEncodingError",
    }:
        return TransientError(
            f"{model}: connection failed ({type(exc).__name__}: {exc})",
            "check the network, or that the model server is running",
            model=model,
        )
    return None


def bad_response(model: str, why: str) -> BadResponse:
    """A reply that arrived but cannot be used; the Router retries it a couple of times."""
    return BadResponse(
        f"{model}: unusable reply ({why})",
        "usually transient; if it persists the server is not speaking this API",
        model=model,
    )


def body_text(exc: Any) -> str:
    """The response body of an SDK status error, for classification and messages."""
    try:
        return exc.response.text
    except Exception:
        return str(getattr(exc, "body", "") or exc)
