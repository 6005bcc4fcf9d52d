"""mlguild.llm: one small protocol, provider adapters, and the machinery that survives real services.

    llm = Router([make_llm("anthropic/claude-sonnet-4-5"), make_llm("gemini/gemini-2.5-flash")],
                 ledger=Ledger(sink=lambda rec: events.llm_call(journal, rec)),
                 cache=ReplyCache(run_dir / "llm_cache"))
    reply = llm.complete([Message("system", ...), Message("user", ...)], max_tokens=16384,
                         purpose="draft", node="n0003")
    if reply.truncated: ...

Importing this package loads no provider SDK; ``make_llm`` imports only the chosen one.
``mlguild.config.llm`` (pydantic) holds ``LLMConfig``; ``mlguild.llm.router`` builds the Router.
"""

from .base import LLM, Completion, Message, normalise_finish_reason
from .cache import ReplyCache, cache_key
from .errors import (
    AllModelsExhausted,
    AuthError,
    BadResponse,
    InvalidRequest,
    LLMError,
    LLMTimeout,
    QuotaExhausted,
    RateLimited,
    TransientError,
)
from .ledger import Ledger
from .registry import PRESETS, make_llm, parse_model_string
from .router import Router
from .scripted import ScriptedLLM

__all__ = [
    "LLM",
    "PRESETS",
    "AllModelsExhausted",
    "AuthError",
    "BadResponse",
    "Completion",
    "InvalidRequest",
    "LLMError",
    "LLMTimeout",
    "Ledger",
    "Message",
    "QuotaExhausted",
    "RateLimited",
    "ReplyCache",
    "Router",
    "ScriptedLLM",
    "TransientError",
    "cache_key",
    "make_llm",
    "normalise_finish_reason",
    "parse_model_string",
]
