"""Typed configuration of the LLM layer, and the one function that builds it for a run.

Kept out of ``mlguild.llm.__init__`` so importing the protocol does not import pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .cache import ReplyCache
from .ledger import Ledger
from .registry import make_llm
from .router import Router

CACHE_DIR = "llm_cache"


class LLMConfig(BaseModel):
    """The ``llm:`` section of a run's configuration."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(
        default_factory=list, description="Fallback chain of provider/model strings, tried in order."
    )
    max_tokens: int = Field(
        16384, gt=0, description="Output cap of one reply (an 8k cap truncated whole scripts in the seed run)."
    )
    temperature: float = Field(
        0.2, ge=0, le=2, description="Sampling temperature (not sent to OpenAI reasoning models or Anthropic)."
    )
    timeout_s: float = Field(300.0, gt=0, description="Wall-clock limit of one request.")
    retries: int = Field(4, ge=0, description="Extra attempts per model after a transient error or rate limit.")
    bad_response_retries: int = Field(2, ge=0, description="Extra attempts per model after an unusable reply.")
    backoff_base_s: float = Field(2.0, gt=0, description="First backoff ceiling; it doubles per retry (full jitter).")
    backoff_cap_s: float = Field(60.0, gt=0, description="Largest backoff ceiling.")
    retry_after_cap_s: float = Field(120.0, gt=0, description="Longest server-advised Retry-After that is honoured.")
    park_s: float | None = Field(
        None, gt=0, description="How long a quota-exhausted model is parked (None = rest of run)."
    )
    max_tokens_total: int | None = Field(None, gt=0, description="Run budget of LLM tokens (None = unlimited).")
    max_cost_usd: float | None = Field(None, gt=0, description="Run budget of LLM spend in USD (None = unlimited).")
    cache: bool = Field(True, description="Keep replies in the run directory so a resume never pays twice.")


def build_router(
    config: LLMConfig,
    *,
    run_dir: str | Path | None = None,
    sink: Callable[[dict[str, Any]], Any] | None = None,
    records: Iterable[dict[str, Any]] = (),
    **overrides: Any,
) -> Router:
    """The Router for a run: adapters for ``config.models`` (failing now on a missing key or
    SDK), a ledger rebuilt from ``records`` (earlier journal records, on resume) that forwards
    new records to ``sink``, and a cache at ``<run_dir>/llm_cache``. ``overrides`` go to the
    Router (tests pass ``sleep``/``clock``)."""
    if not config.models:
        from ..core.errors import ConfigError

        raise ConfigError("no LLM model is configured", "pass --model provider/name (e.g. --model openai/gpt-4.1)")
    llms = [make_llm(model) for model in config.models]
    cache = ReplyCache(Path(run_dir) / CACHE_DIR) if config.cache and run_dir is not None else None
    return Router(llms, config, ledger=Ledger.from_records(records, sink=sink), cache=cache, **overrides)
