"""The ``llm:`` section of a run's configuration (the LLM layer, mlguild.llm, reads it).

Its own module so that the LLM layer and the rest of the configuration share it without
either importing the other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LLMConfig(BaseModel):
    """The ``llm:`` section of a run's configuration."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(
        default_factory=list, description="Fallback chain of provider/model strings, tried in order."
    )
    # 16k, not 8k: an 8k cap truncated whole scripts in the seed run.
    max_tokens: int = Field(16384, gt=0, description="Output cap of one reply, in tokens (room for a whole script).")
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
