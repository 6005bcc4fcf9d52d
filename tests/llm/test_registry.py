"""Model strings, presets, keys and endpoints: everything that must fail at start, not hours in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from mlguild.core.errors import ConfigError, MlguildError
from mlguild.llm import Message, make_llm, parse_model_string
from mlguild.llm.registry import PRESETS, resolve_base_url

from .sdks import needs_anthropic, needs_gemini, needs_openai
from .servers import reply

_OPENAI = ("OpenAICompatLLM", needs_openai)
_ANTHROPIC = ("AnthropicLLM", needs_anthropic)
_GEMINI = ("GeminiLLM", needs_gemini)


@pytest.mark.parametrize(
    "model, kind",
    [
        pytest.param(m, k[0], marks=k[1], id=m)
        for m, k in [
            ("openai/gpt-4.1", _OPENAI),
            ("anthropic/claude-sonnet-4-5", _ANTHROPIC),
            ("gemini/gemini-2.5-flash", _GEMINI),
            ("gemini-openai/gemini-2.5-flash", _OPENAI),
            ("openrouter/anthropic/claude-sonnet-4.5", _OPENAI),
            ("deepseek/deepseek-chat", _OPENAI),
            ("ollama/qwen2.5-coder:14b", _OPENAI),
            ("vllm/Qwen/Qwen2.5-Coder-32B-Instruct", _OPENAI),
            ("llamacpp/local", _OPENAI),
        ]
    ],
)
def test_model_strings_resolve_to_adapters(model, kind, monkeypatch):
    for preset in PRESETS.values():
        for name in preset.key_env:
            monkeypatch.setenv(name, "k")
    llm = make_llm(model)
    assert type(llm).__name__ == kind and llm.model == model
    assert llm.name == model.split("/", 1)[1]  # the provider prefix is stripped, the rest kept whole


@needs_openai
def test_local_servers_default_to_their_usual_ports():
    assert resolve_base_url("ollama") == "http://localhost:11434/v1"
    assert resolve_base_url("llamacpp") == "http://localhost:8080/v1"
    assert resolve_base_url("vllm") == "http://localhost:8000/v1"
    make_llm("ollama/llama3")  # no key needed, nothing contacted


def test_missing_key_names_the_variable_to_set():
    with pytest.raises(ConfigError) as info:
        make_llm("anthropic/claude-sonnet-4-5")
    err = info.value
    assert err.message.startswith("ANTHROPIC_API_KEY is not set")
    assert err.fix == "export ANTHROPIC_API_KEY=... (or choose another --model)"


@needs_gemini
def test_gemini_accepts_either_key_variable(monkeypatch):
    with pytest.raises(ConfigError, match=r"GEMINI_API_KEY is not set \(or GOOGLE_API_KEY\)"):
        make_llm("gemini/gemini-2.5-flash")
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    assert make_llm("gemini/gemini-2.5-flash").key_env == "GOOGLE_API_KEY"


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ConfigError) as info:
        make_llm("mistral/large")
    for provider in (
        "openai",
        "anthropic",
        "gemini",
        "ollama",
        "vllm",
        "llamacpp",
        "openrouter",
        "deepseek",
        "gemini-openai",
    ):
        assert provider in info.value.message


@pytest.mark.parametrize("bad", ["gpt-4.1", "openai/", "/gpt-4.1", ""])
def test_malformed_model_string(bad):
    with pytest.raises(ConfigError, match="provider/model-name"):
        parse_model_string(bad)


@needs_openai
def test_base_url_env_override_reaches_the_server(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("MLGUILD_OPENAI_BASE_URL", server.url + "/v1")
    server.script("gpt-4.1", reply("via env"))
    assert make_llm("openai/gpt-4.1").complete([Message("user", "hi")], max_tokens=5).text == "via env"
    assert server.requests[0].headers["authorization"] == "Bearer k"


@needs_openai
def test_hyphenated_provider_env_name(server, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    monkeypatch.setenv("MLGUILD_GEMINI_OPENAI_BASE_URL", server.url + "/v1")
    make_llm("gemini-openai/gemini-2.5-flash").complete([Message("user", "hi")], max_tokens=5)
    assert server.requests_for("gemini-2.5-flash")[0].path == "/v1/chat/completions"


@needs_openai
def test_explicit_base_url_beats_the_env(server, monkeypatch):
    monkeypatch.setenv("MLGUILD_VLLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    llm = make_llm("vllm/coder", base_url=server.url + "/v1")
    assert llm.complete([Message("user", "hi")], max_tokens=5).text == "reply from coder"


def test_missing_optional_sdk_says_which_extra_to_install(tmp_path):
    # A real interpreter in which `import anthropic` fails, as it does when the extra is absent.
    (tmp_path / "anthropic.py").write_text("raise ImportError(\"No module named 'anthropic'\")\n")
    code = textwrap.dedent("""
        from mlguild.llm import make_llm
        from mlguild.core.errors import ConfigError
        try:
            make_llm("anthropic/claude-sonnet-4-5")
        except ConfigError as err:
            print(err.fix)
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "ANTHROPIC_API_KEY": "k"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.strip() == "pip install 'mlguild[anthropic]'", out.stderr


def test_importing_the_package_loads_no_provider_sdk():
    code = (
        "import sys, mlguild.llm; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'google', 'httpx2')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.strip() == "[]", out.stderr


def test_errors_are_user_facing():
    with pytest.raises(MlguildError) as info:
        make_llm("openai/gpt-4.1")
    assert "fix: export OPENAI_API_KEY" in str(info.value)
