"""What a call costs: USD per million input / output tokens, by model name.

Prices as listed on the providers' public pricing pages as of 2025-10 (standard tier,
no batch discount, prompts under any long-context surcharge threshold). They drift: check
them before trusting a cost figure, and add models here. An unknown model costs 0 and is
reported as ``cost_known=False`` so a summary never presents a guess as a fact.
"""

from __future__ import annotations

# name prefix -> (USD per 1M input tokens, USD per 1M output tokens).
# Matched by longest prefix, so dated variants ("claude-sonnet-4-5-20250929") find their family.
PRICES: dict[str, tuple[float, float]] = {
    # OpenAI
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    # Anthropic
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
    # Google (Gemini API, prompts <= 200k tokens)
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.0-flash": (0.10, 0.40),
    # DeepSeek (V3.2 pricing, cache-miss input)
    "deepseek-chat": (0.28, 0.42),
    "deepseek-reasoner": (0.28, 0.42),
}

# Models served on the user's own hardware (and the package's scripted fake): free, and known to be.
LOCAL_PROVIDERS = frozenset({"ollama", "vllm", "llamacpp", "scripted"})


def price_of(model: str) -> tuple[float, float] | None:
    """(input, output) USD per million tokens for a full model string, or None if unknown.

    Provider-prefixed names resolve by their last segment, so ``gemini-openai/gemini-2.5-flash``
    and ``gemini/gemini-2.5-flash`` share a price; local providers always cost (0, 0).
    OpenRouter models are unknown on purpose: its prices differ from the upstream provider.
    """
    provider, _, name = model.partition("/")
    if provider in LOCAL_PROVIDERS:
        return (0.0, 0.0)
    if provider == "openrouter":
        return None
    name = name or provider
    best = max((p for p in PRICES if name == p or name.startswith(p + "-")), key=len, default=None)
    return PRICES[best] if best else None


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> tuple[float, bool]:
    """(cost in USD, whether the price is known). Unknown prices cost 0."""
    price = price_of(model)
    if price is None:
        return 0.0, False
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000, True
