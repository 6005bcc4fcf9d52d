"""The LLM error taxonomy: what went wrong, and therefore what the Router does about it.

Adapters translate every SDK exception into one of these, so retry and fallback policy is
written once (in the Router) and reads the class, never a provider's wording:

  TransientError   5xx, connection reset          -> back off and retry the same model
    LLMTimeout     no reply within timeout_s      -> back off and retry
  RateLimited      429 per-minute limits          -> wait Retry-After (capped), retry
  QuotaExhausted   daily/monthly quota, billing   -> park THIS model, try the next one
  AuthError        401/403, bad key               -> stop: a person must fix the key
  BadResponse      malformed JSON, no choices     -> retry a couple of times, then fail
  InvalidRequest   other 4xx (bad model name...)  -> stop: retrying sends the same mistake
  AllModelsExhausted  every model in the chain is parked -> stop the run cleanly

All are MlguildErrors, so one that escapes to the terminal says what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import MlguildError, ProposalFailed, StopRun
from ..core.vocabulary import FailureKind

if TYPE_CHECKING:
    from ..core.errors import ConfigError


class LLMError(MlguildError, ProposalFailed):
    """Base of every error an adapter or the Router raises. ``model`` is the full model string.
    One that reaches the loop fails its node (``llm_error``); the run goes on, unless the
    error is also a StopRun (no valid key, every model parked)."""

    retryable = False
    kind = FailureKind.LLM_ERROR

    def __init__(self, message: str, fix: str | None = None, *, model: str = ""):
        super().__init__(message, fix)
        self.model = model


class TransientError(LLMError):
    """The service failed in a way that usually heals by itself (5xx, reset connection)."""

    retryable = True


class LLMTimeout(TransientError):
    """No complete reply within the caller's ``timeout_s``."""


class RateLimited(LLMError):
    """A short-window limit (requests/tokens per minute). ``retry_after_s`` is the server's
    advice in seconds, or None when it gave none (then the Router backs off)."""

    retryable = True

    def __init__(self, message: str, fix: str | None = None, *, model: str = "", retry_after_s: float | None = None):
        super().__init__(message, fix, model=model)
        self.retry_after_s = retry_after_s


class QuotaExhausted(LLMError):
    """A long-window quota or billing limit of one model: waiting minutes cannot fix it.

    Quota is metered per model (the seed run parked a healthy run because it assumed an
    account-wide quota), so the Router parks only this model and moves to the next.
    """


class AuthError(LLMError, StopRun):
    """The key was refused (401/403, or "API key not valid")."""


class BadResponse(LLMError):
    """The service answered, but not with a usable reply (malformed JSON, no choices, empty text)."""

    retryable = True


class InvalidRequest(LLMError):
    """The service rejected the request itself (unknown model, context too long, bad parameter)."""


class AllModelsExhausted(LLMError, StopRun):
    """Every model in the fallback chain is parked. ``parked`` maps model -> reason;
    ``retry_in_s`` is the wait until the first timed park ends (None: parked for the run)."""

    def __init__(self, parked: dict[str, str], retry_in_s: float | None = None):
        lines = "; ".join(f"{m}: {why}" for m, why in parked.items())
        when = f" The first model is usable again in {retry_in_s:.0f}s." if retry_in_s is not None else ""
        super().__init__(
            f"every model in the fallback chain is parked ({lines}).{when}",
            "add a model from another provider to the chain (--model a --model b), raise the quota "
            "with the provider, or continue later with `mlguild resume <run-dir>`",
        )
        self.parked = dict(parked)
        self.retry_in_s = retry_in_s


def missing_sdk(package: str, extra: str) -> ConfigError:
    """The error for a provider whose optional SDK is not installed."""
    from ..core.errors import ConfigError

    return ConfigError(
        f"the {package!r} package is needed for this model but is not installed", f"pip install 'mlguild[{extra}]'"
    )
