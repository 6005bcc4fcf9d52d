"""Stage IV of the community cycle: the model writes a node's report from the harness's numbers.

One small request per node, starting with the brain's system turn like every request after the
exploration (the run's stable prefix: the provider's cache serves it, so the task, brief and
data it holds cost a tenth of their price and let the model judge the numbers against the
task), labelled with the node so that the run's reply cache serves a resume. The reply is one
JSON object (method, components, results, limitations, next directions); a reply that is not
one, or holds neither a method nor a direction, is unreadable and the node keeps the harness's
report (mlguild.run.cycle_report). Every field is bounded: it goes into other nodes' prompts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...core.protocols import ReportRequest, WrittenReport
from ...llm.base import Message
from ...prompts import render
from .conversation import Conversation

REPORT_MAX_TOKENS = 900  # a report is short: a few hundred words at most
_FIELD_CHARS = 400
_LIST_LIMITS = {"components": 5, "limitations": 3, "next": 3}
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def write_report(talk: Conversation, request: ReportRequest) -> WrittenReport | None:
    """The model's report of ``request``'s node, or None when its reply cannot be read."""
    prompt = render("report", task=request.task, plan=request.plan.strip(), harness=request.harness.strip())
    # The node's proposal set the system turn; a brain asked for a report first has none to send.
    messages = talk.messages(prompt) if talk.system is not None else [Message("user", prompt)]
    reply = talk.llm.complete(
        messages,
        max_tokens=REPORT_MAX_TOKENS,
        temperature=talk.options.temperature,
        timeout_s=talk.options.timeout_s,
        purpose="report",
        node=request.node,
    )
    return parse_report(reply.text, talk.model)


def parse_report(text: str, model: str = "") -> WrittenReport | None:
    """The report in a reply (its first JSON object, fenced or not), or None."""
    found = _OBJECT.search(text)
    if found is None:
        return None
    try:
        data = json.loads(found.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    method, directions = _text(data.get("method")), _texts(data.get("next"), _LIST_LIMITS["next"])
    if not method and not directions:
        return None
    return WrittenReport(
        method=method,
        components=_texts(data.get("components"), _LIST_LIMITS["components"]),
        results=_text(data.get("results")),
        limitations=_texts(data.get("limitations"), _LIST_LIMITS["limitations"]),
        directions=directions,
        model=model,
    )


def _text(value: Any) -> str:
    text = " ".join(str(value).split()) if isinstance(value, (str, int, float)) else ""
    return text if len(text) <= _FIELD_CHARS else text[: _FIELD_CHARS - 1] + "…"


def _texts(value: Any, limit: int) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return tuple(t for t in (_text(v) for v in items) if t)[:limit]
