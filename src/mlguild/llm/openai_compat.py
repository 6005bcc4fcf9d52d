"""Adapter for every OpenAI-compatible chat endpoint: OpenAI, OpenRouter, DeepSeek, Gemini's
OpenAI endpoint, and local servers (Ollama, vLLM, llama.cpp) — through the ``openai`` SDK.

The SDK's own retries are off (``max_retries=0``): the Router owns retry policy, and two
retry loops stacked would multiply waits and hide every attempt from the ledger.
"""

from __future__ import annotations

import re
import time
from typing import Any

from .base import Completion, Message, normalise_finish_reason
from .classify import bad_response, body_text, classify_status, classify_transport
from .errors import missing_sdk
from .prices import cost_usd

# OpenAI's reasoning models (o-series, gpt-5 and later) answer 400 to any temperature but
# their default, which would stop a run; so on OpenAI itself temperature is sent only to the
# classic chat models known to accept it. Other servers always get it.
_TAKES_TEMPERATURE = re.compile(r"^(ft:)?(gpt-4|gpt-3\.5)|chat-latest")


class OpenAICompatLLM:
    """One model behind an OpenAI-style ``/chat/completions`` endpoint.

    ``model`` is the full model string (``openai/gpt-4.1``); ``name`` is what the server calls
    it (``gpt-4.1``). ``max_tokens_param`` is the request field for the output cap
    (``max_completion_tokens`` for OpenAI itself, ``max_tokens`` for the rest).
    """

    def __init__(
        self,
        model: str,
        name: str,
        *,
        base_url: str,
        api_key: str,
        key_env: str | None = None,
        max_tokens_param: str = "max_tokens",
    ):
        try:
            import openai
        except ImportError:
            raise missing_sdk("openai", "llm") from None
        self.model = model
        self.name = name
        self.key_env = key_env
        self.max_tokens_param = max_tokens_param
        self._sdk = openai
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=300.0)
        self._send_temperature = not model.startswith("openai/") or bool(_TAKES_TEMPERATURE.search(name))

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
        request: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            self.max_tokens_param: max_tokens,
        }
        if self._send_temperature:
            request["temperature"] = temperature
        sdk = self._sdk
        started = time.monotonic()
        try:
            reply = self._client.chat.completions.create(**request, timeout=timeout_s)
        except sdk.APIStatusError as exc:
            raise classify_status(
                exc.status_code, body_text(exc), exc.response.headers, model=self.model, key_env=self.key_env
            ) from None
        except sdk.APIResponseValidationError as exc:
            raise bad_response(self.model, str(exc)) from None
        except sdk.APIConnectionError as exc:
            raise (classify_transport(exc, model=self.model) or bad_response(self.model, str(exc))) from None
        except ValueError as exc:  # a 200 whose body is not JSON (json.JSONDecodeError)
            raise bad_response(self.model, f"body is not JSON: {exc}") from None
        return self._parse(reply, time.monotonic() - started)

    def _parse(self, reply: Any, latency_s: float) -> Completion:
        # A non-JSON content type makes the SDK hand back the raw text instead of an object.
        choices = getattr(reply, "choices", None)
        if not choices:
            raise bad_response(self.model, f"no choices in the reply: {str(reply)[:200]!r}")
        choice = choices[0]
        finish = normalise_finish_reason(getattr(choice, "finish_reason", None))
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        if not isinstance(text, str):
            raise bad_response(self.model, f"message content is {type(text).__name__}, not text")
        # Empty text is only a bad reply when the model claims it finished: an empty "length"
        # reply (all tokens spent thinking) is a truncation the caller must see as such.
        if not text.strip() and finish != "length":
            raise bad_response(self.model, f"empty content (finish_reason {finish})")
        usage = getattr(reply, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)  # OpenAI, vLLM and others send it
        return Completion(
            text=text,
            model=self.model,
            finish_reason=finish,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost_usd(self.model, tokens_in, tokens_out)[0],
            latency_s=round(latency_s, 4),
            prompt_cache_tokens=int(getattr(details, "cached_tokens", 0) or 0),
        )
