"""The community cycle (``--cycle community``): four stages per node, for the LLM brain.

I.   Select: the idea pool's best ideas for this task, ranked with what the run's reports
     showed when they were tried (mlguild.pools.ideas).
II.  Draft: a high-level approach that recombines or extends them, with each component
     tagged by its origin (an idea's id, or ``[new]``): a design, not a copied notebook.
III. Implement: the draft becomes a script in an isolated context (the task, the data profile
     and the draft, nothing of the run's history), then runs in a bounded run-observe-fix
     loop inside the node (the agent drives it, mlguild.run.loop; every step is recorded).
IV.  Report: the node's report (mlguild.pools.reports) says which components came from the
     community and which are new, and its outcome goes back to the ideas it used.
"""

from __future__ import annotations

import re

from ...coder import failure_from_node
from ...core.errors import ProposalFailed
from ...core.protocols import Action, Context, FixRequest, Proposal
from ...core.vocabulary import Op
from ...pools.ideas import cited_ideas
from ...prompts import render
from .conversation import Conversation
from .planner import plan_recall, recall_meta

CYCLE_OPS = (Op.DRAFT, Op.IMPROVE, Op.EVOLVE)
SELECTED_IDEAS = 3  # ideas one attempt combines: more makes a muddle, fewer a copy
_NEW = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(.+?)\s*\[new\]\s*$", re.IGNORECASE | re.MULTILINE)


def novel_components(draft: str) -> list[str]:
    """The draft's components it marks as its own (``[new]``)."""
    return [c.strip(" :-") for c in _NEW.findall(draft)][:10]


def cycle_proposal(talk: Conversation, action: Action, context: Context, common: dict, node: str) -> Proposal:
    chosen = context.ideas[:SELECTED_IDEAS]  # stage I
    parent = context.parents[0] if context.parents else None
    score = f"{parent.score:.6g}" if parent is not None and parent.score is not None else "—"
    prompt = render("cycle_draft", **{**common, "ideas": chosen}, parent=parent, parent_score=score)
    draft = talk.ask(talk.messages(prompt), "cycle:draft", node).text.strip()  # stage II
    if not draft:
        raise ProposalFailed("the model wrote no draft for the community cycle")
    # Stage III: only the draft in the request (the system turn holds the task and the data),
    # with the memory's records most like the draft (mlguild.brains.llm.planner: no request added).
    recall = plan_recall(context, draft)
    prompt = render("cycle_implement", draft=draft, time_budget_s=common["time_budget_s"], plan_recall=recall)
    plan, code = talk.full_script(prompt, "cycle:implement", node)
    first = next((ln.strip() for ln in draft.splitlines() if ln.strip()), "")
    meta: dict[str, object] = {
        "summary": first.removeprefix("Draft:").strip()[:200],
        "model": talk.model,
        "cycle": "community",
        "ideas": cited_ideas(draft, chosen),
        "novel": novel_components(draft),
    }
    if recall is not None:
        meta["plan_recall"] = recall_meta(draft, recall)
    return Proposal(plan=f"{draft}\n\n## Implementation\n{plan}", code=code, meta=meta)


def cycle_fix(talk: Conversation, request: FixRequest) -> tuple[str, str]:
    """The script of the next step, from what the last one did (stage III's fix)."""
    draft = request.plan.split("\n\n## Implementation\n", 1)[0]
    prompt = render(
        "cycle_fix",
        draft=draft,
        code=request.code,
        step=request.step,
        failure=failure_from_node(request.status, request.failure, request.stderr),
        time_budget_s=int(request.timeout_s),
    )
    return talk.full_script(prompt, "cycle:fix", request.node)
