"""The community cycle (``--cycle community``): four stages per node, for the LLM brain.

I.   Select: the harness offers this node a short list (mlguild.run.context: relevant to its
     parent and branch, ranked by signal and results, apart from other workers'); the model picks.
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

CYCLE_OPS = (Op.DRAFT, Op.IMPROVE, Op.EVOLVE)
SELECTED_IDEAS = 3  # ideas one attempt combines: more makes a muddle, fewer a copy
_NEW = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(.+?)\s*\[new\]\s*$", re.IGNORECASE | re.MULTILINE)


def novel_components(draft: str) -> list[str]:
    """The draft's components it marks as its own (``[new]``)."""
    return [c.strip(" :-") for c in _NEW.findall(draft)][:10]


def cycle_proposal(talk: Conversation, action: Action, context: Context, common: dict, node: str) -> Proposal:
    # Stage I: the model chooses at most SELECTED_IDEAS of the short list offered to this node
    # (context.ideas), in the draft request itself: one request, not two; its draft cites them.
    offered = context.ideas
    parent = context.parents[0] if context.parents else None
    score = f"{parent.score:.6g}" if parent is not None and parent.score is not None else "—"
    variables = {**common, "ideas": offered, "choose": SELECTED_IDEAS}
    prompt = render("cycle_draft", **variables, parent=parent, parent_score=score)
    draft = talk.ask(talk.messages(prompt), "cycle:draft", node).text.strip()  # stage II
    if not draft:
        raise ProposalFailed("the model wrote no draft for the community cycle")
    # Stage III: only the draft in the request (the system turn holds the task and the data).
    prompt = render("cycle_implement", draft=draft, time_budget_s=common["time_budget_s"])
    plan, code = talk.full_script(prompt, "cycle:implement", node)
    first = next((ln.strip() for ln in draft.splitlines() if ln.strip()), "")
    meta: dict[str, object] = {
        "summary": first.removeprefix("Draft:").strip()[:200],
        "model": talk.model,
        "cycle": "community",
        "ideas": cited_ideas(draft, offered),
        "novel": novel_components(draft),
    }
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
