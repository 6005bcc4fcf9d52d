"""The model's summary of the exploratory node's output: one request per run.

What the exploration printed goes into the brief, and the brief into every later request's
stable prefix (mlguild.prompts.system), so it should be short and said once: the model reads
the whole output once and writes the facts a modeller can act on, in at most
``SUMMARY_WORDS`` words (mlguild.run.findings writes it into the brief; every later request
reads it from there, byte for byte). The request starts with the run's stable prefix as it
stood before the findings, the exploration's own, so it adds no new prefix to the cache.

A reply that is not a summary (empty, a script, cut off at its token limit) is refused: the
harness's digest of the output serves instead (mlguild.task.brief.digest), and so it does with
the scripted LLM of tests and dry runs, whose replies are scripts.
"""

from __future__ import annotations

from ...llm.base import Completion
from ...prompts import render
from .conversation import Conversation

SUMMARY_WORDS = 250
SUMMARY_MAX_TOKENS = 700  # 250 words and their numbers, with room to spare
_SUMMARY_CHARS = 2400  # a longer reply is cut at a line's end: it goes into every request's prefix
_OUTPUT_READ = 16_000  # characters of the output the request shows (its end: conclusions come last)
_ERROR_READ = 1500
_MIN_CHARS = 20  # shorter is not a summary ("ok")


def summarise(talk: Conversation, output: str, failure: str, node: str) -> str | None:
    """The model's summary of what exploratory node ``node`` printed (``failure``: why it
    stopped, when it did), or None when the reply is not one. ``talk``'s system turn must be
    the exploration's (the brain prepares it)."""
    prompt = render(
        "findings",
        node=node,
        output=output.strip()[-_OUTPUT_READ:],
        failure=failure.strip()[-_ERROR_READ:],
        max_words=SUMMARY_WORDS,
    )
    reply = talk.llm.complete(
        talk.messages(prompt),
        max_tokens=SUMMARY_MAX_TOKENS,
        temperature=talk.options.temperature,
        timeout_s=talk.options.timeout_s,
        purpose="findings",
        node=node,
    )
    return parse_summary(reply)


def parse_summary(reply: Completion) -> str | None:
    """The summary in ``reply``, bounded, or None: no text, code, or a reply cut off."""
    text = reply.text.strip()
    if reply.truncated or len(text) < _MIN_CHARS or "```" in text:
        return None
    if len(text) <= _SUMMARY_CHARS:
        return text
    kept = text[:_SUMMARY_CHARS].rsplit("\n", 1)[0]
    return kept if len(kept) >= _MIN_CHARS else text[:_SUMMARY_CHARS]
