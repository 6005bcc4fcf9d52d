"""Providers chosen by a model string ``provider/model-name``.

A preset says which adapter speaks the provider's API, where it lives and which variable
holds its key. Everything is checked when the LLM is made, not at the first call hours into
a run: a missing key, an unknown provider or a missing SDK fails at start with the fix.

Base URL precedence: the ``base_url`` argument, then ``MLGUILD_<PROVIDER>_BASE_URL``
(``-`` becomes ``_``: ``MLGUILD_GEMINI_OPENAI_BASE_URL``), then the preset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.errors import ConfigError
from .base import LLM


@dataclass(frozen=True)
class Preset:
    """How to reach one provider."""

    kind: str  # adapter: openai_compat | anthropic | gemini
    base_url: str  # default endpoint
    key_env: tuple[str, ...] = ()  # variables that may hold the key, first set wins; () = local server
    max_tokens_param: str = "max_tokens"  # openai_compat only: the name this server understands


PRESETS: dict[str, Preset] = {
    # OpenAI's reasoning models reject max_tokens; max_completion_tokens works for all of them.
    "openai": Preset("openai_compat", "https://api.openai.com/v1", ("OPENAI_API_KEY",), "max_completion_tokens"),
    "anthropic": Preset("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
    "gemini": Preset("gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "gemini-openai": Preset(
        "openai_compat", "https://generativelanguage.googleapis.com/v1beta/openai", ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    ),
    "openrouter": Preset("openai_compat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "deepseek": Preset("openai_compat", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
    "ollama": Preset("openai_compat", "http://localhost:11434/v1"),
    "vllm": Preset("openai_compat", "http://localhost:8000/v1"),
    "llamacpp": Preset("openai_compat", "http://localhost:8080/v1"),
}

# Local servers ignore the key, but the OpenAI client refuses to start without one.
LOCAL_KEY = "not-needed"


def parse_model_string(model: str) -> tuple[str, str]:
    """Split ``provider/name`` at the first slash (OpenRouter names contain slashes themselves)."""
    provider, sep, name = model.strip().partition("/")
    if not sep or not provider or not name:
        raise ConfigError(
            f"model {model!r} is not of the form provider/model-name",
            f"use e.g. --model openai/gpt-4.1 (providers: {', '.join(PRESETS)})",
        )
    if provider not in PRESETS:
        raise ConfigError(
            f"unknown LLM provider {provider!r} in {model!r}; known providers: {', '.join(PRESETS)}",
            f"use one of them, e.g. --model ollama/{name}",
        )
    return provider, name


def env_prefix(provider: str) -> str:
    return "MLGUILD_" + provider.upper().replace("-", "_")


def resolve_base_url(provider: str, base_url: str | None = None) -> str:
    """The endpoint for ``provider`` after the argument and environment overrides."""
    return base_url or os.environ.get(env_prefix(provider) + "_BASE_URL") or PRESETS[provider].base_url


def resolve_key(provider: str, model: str) -> tuple[str, str | None]:
    """(key, the variable it came from). Fails with the exact variable to set when none is."""
    preset = PRESETS[provider]
    if not preset.key_env:
        return LOCAL_KEY, None
    for name in preset.key_env:
        if os.environ.get(name):
            return os.environ[name], name
    name = preset.key_env[0]
    also = f" (or {', '.join(preset.key_env[1:])})" if len(preset.key_env) > 1 else ""
    raise ConfigError(
        f"{name} is not set{also}: it is needed for {model}", f"export {name}=... (or choose another --model)"
    )


def make_llm(model: str, base_url: str | None = None) -> LLM:
    """An adapter for ``model`` (``provider/name``), ready to call.

    Raises ConfigError (before any request) for a malformed string, an unknown provider, a
    missing key or a missing optional SDK. The adapter does not retry; wrap it in a Router.
    """
    provider, name = parse_model_string(model)
    preset = PRESETS[provider]
    key, key_env = resolve_key(provider, model)
    url = resolve_base_url(provider, base_url)
    # Imported here, not at module top: each adapter pulls in its SDK, and only the chosen one may load.
    if preset.kind == "openai_compat":
        from .openai_compat import OpenAICompatLLM

        return OpenAICompatLLM(
            model, name, base_url=url, api_key=key, key_env=key_env, max_tokens_param=preset.max_tokens_param
        )
    if preset.kind == "anthropic":
        from .anthropic_native import AnthropicLLM

        return AnthropicLLM(model, name, base_url=url, api_key=key, key_env=key_env)
    if preset.kind == "gemini":
        from .gemini_native import GeminiLLM

        return GeminiLLM(model, name, base_url=url, api_key=key, key_env=key_env)
    raise AssertionError(f"preset {provider} has unknown kind {preset.kind}")  # a bug in PRESETS, not user input
