"""The LLM brain's conversation with its model: the system turn every request of a run
shares, one request, and one whole script (a reply without code asked again, a truncated one
continued instead of re-derived). The brain (mlguild.brains.llm.brain) and the community
cycle (mlguild.brains.llm.cycle) both talk through it."""

from __future__ import annotations

from dataclasses import dataclass

from ...coder import MAX_CONTINUATIONS, CoderFailure, continue_prompt, extract_code, join_continuation
from ...core.vocabulary import FailureKind
from ...llm.base import LLM, Completion, Message

_FORMAT_REMINDER = (
    "Your reply had no Python code. Reply again with a short plan and the complete "
    "script in a single ```python fenced block."
)


@dataclass(frozen=True)
class RequestOptions:
    """How every request is sent (the ``llm:`` section's settings)."""

    max_tokens: int
    temperature: float
    timeout_s: float  # one request's wall-clock limit


class Conversation:
    """Requests to one LLM with one system turn (set by the brain, the same text for every
    request of a run so that providers' prompt caches serve it)."""

    def __init__(self, llm: LLM, options: RequestOptions):
        self.llm, self.options = llm, options
        self.system: str | None = None

    @property
    def model(self) -> str:
        return self.llm.model

    def messages(self, prompt: str) -> list[Message]:
        """The system turn, then ``prompt`` as the user turn."""
        assert self.system is not None, "the brain renders the system turn before the first request"
        return [Message("system", self.system), Message("user", prompt)]

    def ask(self, messages: list[Message], purpose: str, node: str) -> Completion:
        """One request; ``purpose`` and ``node`` label it in the ledger."""
        return self.llm.complete(
            messages,
            max_tokens=self.options.max_tokens,
            temperature=self.options.temperature,
            timeout_s=self.options.timeout_s,
            purpose=purpose,
            node=node,
        )

    def full_script(
        self,
        prompt: str,
        purpose: str,
        node: str,
        spent: list[Completion] | None = None,
        first: Completion | None = None,
    ) -> tuple[str, str]:
        """(plan, script) for ``prompt``: a reply without code is asked once more for the
        format, a truncated one is continued up to ``MAX_CONTINUATIONS`` times. Raises
        CoderFailure (named: no_code, truncated, syntax_error, ...) when no script came of it.
        ``spent``: a list the replies are added to (what the script cost). ``first``: the reply
        to ``prompt`` the caller already asked for and read (it is not asked again)."""
        messages = self.messages(prompt)
        ask = self.ask if spent is None else lambda m, p, n: _kept(self.ask(m, p, n), spent)
        reply = first if first is not None else ask(messages, purpose, node)
        extraction = extract_code(reply.text, reply.finish_reason)
        if extraction.failure and extraction.failure.kind == FailureKind.NO_CODE:
            messages = messages + [Message("assistant", reply.text), Message("user", _FORMAT_REMINDER)]
            reply = ask(messages, f"{purpose}:reformat", node)
            extraction = extract_code(reply.text, reply.finish_reason)
        plan = extraction.plan
        for _ in range(MAX_CONTINUATIONS):
            if not (extraction.failure and extraction.failure.kind == FailureKind.TRUNCATED):
                break
            partial = extraction.partial or ""
            # The context is the prompt plus the code so far, not every earlier reply: it stays
            # within small context windows however many continuations it takes.
            so_far = Message("assistant", f"{plan}\n\n```python\n{partial}")
            reply = ask(messages + [so_far, Message("user", continue_prompt(partial))], f"{purpose}:continue", node)
            extraction = join_continuation(partial, reply.text, reply.finish_reason)
        if extraction.failure is not None:
            raise CoderFailure(extraction.failure)
        return plan or "(no plan given)", extraction.code or ""


def _kept(reply: Completion, spent: list[Completion]) -> Completion:
    spent.append(reply)
    return reply
