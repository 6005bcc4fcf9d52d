"""A scripted LLM that ships in the package: it drives brain tests and ``--dry-run`` with no
network. It is a real LLM implementation (not a mock of one): it answers from a queue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from .base import Completion, Message
from .errors import LLMError

# A reply is text, a whole Completion, an LLMError to raise (to rehearse failure paths), or a
# function of the request's messages returning any of those.
Reply = str | Completion | LLMError | Callable[[list[Message]], str | Completion | LLMError]


class ScriptedLLM:
    """Answers from ``replies`` in order, then with ``default`` (or raises IndexError if None).

    ``calls`` keeps every request (messages and parameters) so a test can assert the prompt.
    Text replies report ``finish_reason="stop"`` and token counts of about len/4.
    """

    def __init__(self, replies: Iterable[Reply] = (), *, model: str = "scripted/fake", default: Reply | None = "ok"):
        self.model = model
        self.replies: deque[Reply] = deque(replies)
        self.default = default
        self.calls: list[dict] = []

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
        self.calls.append(
            {
                "messages": list(messages),
                "max_tokens": max_tokens,
                "temperature": temperature,
                "purpose": purpose,
                "node": node,
            }
        )
        if self.replies:
            reply = self.replies.popleft()
        elif self.default is not None:
            reply = self.default
        else:
            raise IndexError(f"{self.model}: the script has no reply left for call {len(self.calls)}")
        if callable(reply) and not isinstance(reply, (LLMError, Completion)):
            reply = reply(list(messages))
        if isinstance(reply, LLMError):
            raise reply
        if isinstance(reply, Completion):
            return reply
        prompt_chars = sum(len(m.content) for m in messages)
        return Completion(
            text=reply,
            model=self.model,
            finish_reason="stop",
            input_tokens=prompt_chars // 4 + 1,
            output_tokens=len(reply) // 4 + 1,
        )
