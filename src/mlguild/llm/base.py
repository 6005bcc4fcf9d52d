"""The LLM protocol and the value types that cross it.

Everything above this line (router, cache, ledger, brains) speaks only these types, so a
provider is a small adapter and a test can drive the whole stack with a local server.
Nothing here imports a provider SDK: ``import mlguild.llm`` must stay fast.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat turn. ``role`` is system, user or assistant; ``content`` is plain text."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant"):
            raise ValueError(f"unknown message role {self.role!r} (use system, user or assistant)")


@dataclass(frozen=True)
class Completion:
    """One reply, normalised across providers.

    ``finish_reason`` is "stop" (the model ended its answer), "length" (it hit ``max_tokens``:
    the text is truncated) or the provider's own reason, lower-cased (e.g. "content_filter").
    ``model`` is the full model string the caller chose (``provider/name``). ``cost_usd`` is 0
    for local models and for replies served from the cache (``cached=True``).
    ``prompt_cache_tokens``: how many of the input tokens the provider read from its own prompt
    cache (a prefix it had seen in an earlier request), when it says so; 0 otherwise.
    ``prompt_cache_write_tokens``: how many it wrote into that cache (Anthropic bills writes apart,
    above the plain input price); 0 where a provider does not say.
    """

    text: str
    model: str
    finish_reason: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    prompt_cache_tokens: int = 0
    prompt_cache_write_tokens: int = 0

    @property
    def truncated(self) -> bool:
        """True when the reply was cut off by the token limit (the seed run's 8k-cap lesson)."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in fields})


# Provider spellings of "the token limit cut the reply off" and "the model chose to stop".
_LENGTH = {"length", "max_tokens", "max_output_tokens", "model_length"}
_STOP = {"stop", "end_turn", "stop_sequence", "eos", "finish_reason_stop"}


def normalise_finish_reason(raw: object) -> str:
    """Map a provider's finish/stop reason to "stop", "length" or its lower-cased self.

    Gemini sends enum members (``FinishReason.MAX_TOKENS``) or strings; OpenAI "length";
    Anthropic "max_tokens". A missing reason is "unknown", never silently "stop".
    """
    if raw is None:
        return "unknown"
    text = str(getattr(raw, "value", raw) or "").strip().lower()
    if "." in text:  # "finishreason.max_tokens" from a str() of an enum member
        text = text.rsplit(".", 1)[1]
    if text in _LENGTH:
        return "length"
    if text in _STOP:
        return "stop"
    return text or "unknown"


def split_system(messages: list[Message]) -> tuple[str, list[Message]]:
    """Separate system turns (joined by blank lines) from the conversation, for the APIs
    (Anthropic, Gemini) that take the system prompt as its own field."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    return system, [m for m in messages if m.role != "system"]


__all__ = ["LLM", "Completion", "Message", "normalise_finish_reason", "split_system"]


@runtime_checkable
class LLM(Protocol):
    """Anything that turns messages into a Completion.

    Contract: ``complete`` returns a Completion or raises an ``mlguild.llm.errors.LLMError``
    subclass (never a provider SDK exception). ``purpose`` and ``node`` are labels for the
    ledger (e.g. "draft", "n0003"); adapters ignore them. Adapters do not retry: retrying,
    fallback and budgets belong to the Router, so one policy governs every provider.
    """

    @property
    def model(self) -> str:
        """The ``provider/name`` string of the model that answers."""
        ...

    def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        timeout_s: float = 300,
        purpose: str = "",
        node: str = "",
    ) -> Completion: ...
