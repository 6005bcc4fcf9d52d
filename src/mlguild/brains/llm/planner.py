"""The planner's memory (MLEvolve's planner with memory): the records most like the model's
own draft plan, found with that plan as the query, and the plan revised from them.

The plan exists before its script only where a request already asks for it, and the memory
is asked there, so that no request is added for it:

* a stepwise draft (``brain.stepwise``): its plan request, then the memory asked with the
  plan, then the first part's request carries the records and may revise the plan
  ("Revised plan: ...") before it writes its code;
* the community cycle (``brain.cycle: community``): its draft request writes the plan, the
  memory is asked with the draft, and the implementing request carries the records;
* a reviewed script (``brain.review``, on by default): the review request carries the records
  found with the script's plan, and a plan that repeats a recorded failure without fixing its
  cause is a serious finding, which sends the script back for its one revision.

A one-request draft or improve with reviews off keeps the records its context found with its
parents' plans (or, for a draft, the task's traits): asking for a plan first would cost one
more request per node. What the memory answered is journaled with the node
(``meta["plan_recall"]``: the query and the lines shown).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...core.protocols import Context

if TYPE_CHECKING:
    from ...memory import Recall

_QUERY_CHARS = 1500  # of the plan, as the query (the index reads its first words anyway)
_REVISED = re.compile(r"^\s*(?:#+\s*)?\**\s*revised plan\s*\**\s*:?\**\s*", re.IGNORECASE)


def plan_recall(context: Context, plan: str) -> Recall | None:
    """The memory's records most like ``plan``, or None when the context has no memory to
    ask, the plan is empty or nothing matched."""
    if context.memory is None or not plan.strip():
        return None
    recall = context.memory.recall(plan[:_QUERY_CHARS])
    return recall or None


def recall_meta(plan: str, recall: Recall) -> dict[str, Any]:
    """What the journal keeps of a planner's recall: the query's start and the lines shown."""
    return {"query": " ".join(plan.split())[:300], "records": recall.lines()}


def revised_plan(plan: str, prose: str) -> str:
    """The plan as the model revised it in ``prose`` (the text before a part's code, starting
    "Revised plan:"), else ``plan`` unchanged."""
    match = _REVISED.match(prose or "")
    if match is None:
        return plan
    revised = prose[match.end() :].strip()
    return revised or plan
