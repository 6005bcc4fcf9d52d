"""Fixtures for the LLM tests: a live local server, provider env pointing at it, instant sleeps."""

from __future__ import annotations

import pytest

from mlguild.llm.registry import PRESETS, env_prefix

from .servers import LLMServer

# The path each SDK appends itself, so the base URL we configure differs per wire.
BASE_PATH = {"openai_compat": "/v1", "anthropic": "", "gemini": ""}


@pytest.fixture(autouse=True)
def _clean_llm_env(monkeypatch):
    # A developer's real keys or endpoints must never leak into a test (or a test's requests out).
    for provider, preset in PRESETS.items():
        monkeypatch.delenv(env_prefix(provider) + "_BASE_URL", raising=False)
        for name in preset.key_env:
            monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with LLMServer() as srv:
        yield srv


@pytest.fixture
def point_at(server, monkeypatch):
    """``point_at("anthropic")`` sets a test key and MLGUILD_ANTHROPIC_BASE_URL to the local server."""

    def _point(provider: str) -> None:
        preset = PRESETS[provider]
        monkeypatch.setenv(env_prefix(provider) + "_BASE_URL", server.url + BASE_PATH[preset.kind])
        for name in preset.key_env[:1]:
            monkeypatch.setenv(name, "test-key")

    return _point


class Sleeps(list):
    """An injectable sleep that records the requested waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


class Clock:
    """An injectable monotonic clock that only moves when a test (or a recorded sleep) moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()
