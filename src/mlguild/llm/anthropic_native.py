"""Adapter for Anthropic's Messages API through the ``anthropic`` SDK.

The system prompt is a separate field there, not a message, so system turns are lifted out,
and it is marked for Anthropic's prompt cache (the shared part of a run's requests).
``temperature`` is accepted for the protocol but not sent: the Messages API of the SDK we
target (anthropic 2.x) has no sampling-temperature parameter, and the SDK rejects one.
An explicit per-call timeout is always passed: it is what the caller asked for, and it also
keeps the SDK from refusing large ``max_tokens`` non-streaming calls on a guessed duration.
"""

from __future__ import annotations

import time
from typing import Any

from .base import Completion, Message, normalise_finish_reason, split_system
from .classify import bad_response, body_text, classify_status, classify_transport
from .errors import missing_sdk
from .prices import cost_usd


class AnthropicLLM:
    """One Claude model. ``model`` is the full string (``anthropic/claude-sonnet-4-5``), ``name``
    the API's model id (``claude-sonnet-4-5``)."""

    def __init__(self, model: str, name: str, *, base_url: str, api_key: str, key_env: str | None = None):
        try:
            import anthropic
        except ImportError:
            raise missing_sdk("anthropic", "anthropic") from None
        self.model = model
        self.name = name
        self.key_env = key_env
        self._sdk = anthropic
        # max_retries=0: the Router retries, and must see (and ledger) every attempt.
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=300.0)

    def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        timeout_s: float = 300,
        purpose: str = "",
        node: str = "",
    ) -> Completion:
        """One request, no retries. Raises only ``mlguild.llm.errors`` classes."""
        system, turns = split_system(messages)
        request: dict[str, Any] = {
            "model": self.name,
            "max_tokens": max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in turns],
        }
        if system:
            # The system prompt holds what every request of a run shares (the task, the data,
            # the contract): marked for the prompt cache, later requests read it at a tenth of
            # the price. A prompt under the model's minimum cacheable length is simply not cached.
            request["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        sdk = self._sdk
        started = time.monotonic()
        try:
            reply = self._client.messages.create(**request, timeout=timeout_s)
        except sdk.APIStatusError as exc:
            raise classify_status(
                exc.status_code, body_text(exc), exc.response.headers, model=self.model, key_env=self.key_env
            ) from None
        except sdk.APIResponseValidationError as exc:
            raise bad_response(self.model, str(exc)) from None
        except sdk.APIConnectionError as exc:
            raise (classify_transport(exc, model=self.model) or bad_response(self.model, str(exc))) from None
        except ValueError as exc:  # a 200 whose body is not JSON
            raise bad_response(self.model, f"body is not JSON: {exc}") from None
        return self._parse(reply, time.monotonic() - started)

    def _parse(self, reply: Any, latency_s: float) -> Completion:
        blocks = getattr(reply, "content", None)
        if not isinstance(blocks, list):
            raise bad_response(self.model, f"no content blocks in the reply: {str(reply)[:200]!r}")
        # Thinking and tool blocks are not part of the answer text.
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", "") == "text")
        finish = normalise_finish_reason(getattr(reply, "stop_reason", None))
        if not text.strip() and finish != "length":
            raise bad_response(self.model, f"empty content (stop_reason {finish})")
        usage = getattr(reply, "usage", None)
        # Prompt-cache reads and writes are input tokens too; they count against the budget.
        tokens_in = sum(
            int(getattr(usage, f, 0) or 0)
            for f in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        tokens_out = int(getattr(usage, "output_tokens", 0) or 0)
        return Completion(
            text=text,
            model=self.model,
            finish_reason=finish,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost_usd(self.model, tokens_in, tokens_out)[0],
            latency_s=round(latency_s, 4),
            prompt_cache_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
            prompt_cache_write_tokens=int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
        )
