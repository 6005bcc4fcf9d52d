"""Adapter for the Gemini API through the ``google-genai`` SDK.

The endpoint is set with ``HttpOptions(base_url=..., api_version="v1beta")``: the base URL is
how tests (and proxies) redirect the real client, and the version is pinned because SDK
releases have changed their default (3.x sends ``v1``), while the features we rely on
(system instruction, thinking token counts) are documented on ``v1beta``. The SDK retries
nothing unless ``retry_options`` is set, which we leave unset: the Router retries.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from .base import Completion, Message, normalise_finish_reason, split_system
from .classify import bad_response, classify_status, classify_transport
from .errors import missing_sdk
from .prices import cost_usd

API_VERSION = "v1beta"


class GeminiLLM:
    """One Gemini model. ``model`` is the full string (``gemini/gemini-2.5-flash``), ``name`` the
    API's model id (``gemini-2.5-flash``)."""

    def __init__(self, model: str, name: str, *, base_url: str, api_key: str, key_env: str | None = None):
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise missing_sdk("google-genai", "gemini") from None
        self.model = model
        self.name = name
        self.key_env = key_env
        self._types = types
        self._errors = errors
        self._client = genai.Client(
            api_key=api_key, http_options=types.HttpOptions(base_url=base_url, api_version=API_VERSION)
        )

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
        types = self._types
        system, turns = split_system(messages)
        contents = [
            types.Content(role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)])
            for m in turns
        ]
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            max_output_tokens=max_tokens,
            temperature=temperature,
            # HttpOptions.timeout is whole milliseconds; round up so 0.0005 s is not "no timeout".
            http_options=types.HttpOptions(timeout=max(1, math.ceil(timeout_s * 1000))),
        )
        started = time.monotonic()
        try:
            reply = self._client.models.generate_content(model=self.name, contents=contents, config=config)
        except self._errors.APIError as exc:
            response = getattr(exc, "response", None)
            headers = dict(getattr(response, "headers", None) or {})
            raise classify_status(
                int(exc.code or 0),
                json.dumps(exc.details, default=str),
                headers,
                model=self.model,
                key_env=self.key_env,
            ) from None
        except ValueError as exc:  # a 200 whose body is not JSON, or that does not fit the schema
            raise bad_response(self.model, f"body is not a Gemini reply: {exc}") from None
        except Exception as exc:
            mapped = classify_transport(exc, model=self.model)
            if mapped is None:
                raise
            raise mapped from None
        return self._parse(reply, time.monotonic() - started)

    def _parse(self, reply: Any, latency_s: float) -> Completion:
        candidates = getattr(reply, "candidates", None)
        if not candidates:
            feedback = getattr(reply, "prompt_feedback", None)
            raise bad_response(self.model, f"no candidates in the reply (prompt feedback: {feedback})")
        candidate = candidates[0]
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        # Thought summaries are not part of the answer.
        text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))
        finish = normalise_finish_reason(getattr(candidate, "finish_reason", None))
        if not text.strip() and finish != "length":
            raise bad_response(self.model, f"empty content (finishReason {finish})")
        usage = getattr(reply, "usage_metadata", None)
        tokens_in = int(getattr(usage, "prompt_token_count", 0) or 0)
        # Thinking tokens are billed as output and count against max_output_tokens.
        tokens_out = int(getattr(usage, "candidates_token_count", 0) or 0) + int(
            getattr(usage, "thoughts_token_count", 0) or 0
        )
        return Completion(
            text=text,
            model=self.model,
            finish_reason=finish,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost_usd(self.model, tokens_in, tokens_out)[0],
            latency_s=round(latency_s, 4),
            prompt_cache_tokens=int(getattr(usage, "cached_content_token_count", 0) or 0),
        )
