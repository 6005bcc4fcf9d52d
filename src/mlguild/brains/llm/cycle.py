"""The community cycle (``--cycle community``): four stages per node, for the LLM brain.

I.   Select: the harness offers this node a short list (mlguild.run.context: relevant to its
     parent and branch, ranked by signal and results, apart from other workers'); the model picks.
II.  Draft: a high-level approach that recombines or extends them, with each component
     tagged by its origin (an idea's id, or ``[new]``): a design, not a copied notebook.
III. Implement: the draft becomes a script in an isolated context (the task, the data profile
     and the draft, nothing of the run's history), then runs in a bounded write-run-observe-
     refine loop inside the node (mlguild.run.fix_loop): a failed step is repaired
     (``cycle_fix``), a working one improved from its own printed validation or judged done
     (``cycle_refine``); the harness scores the node's final script on the holdout once.
IV.  Report: the model writes the node's report from the harness's numbers (mlguild.brains.llm.
     report), whose next directions enter the idea pool; it says which components came from
     the community and which are new, and its outcome goes back to the ideas it used.
"""

from __future__ import annotations

import re

from ...coder import failure_from_node
from ...core.errors import ProposalFailed
from ...core.meta import NodeMeta
from ...core.protocols import Action, Context, FixRequest, Proposal
from ...core.vocabulary import Op
from ...pools.ideas import cited_ideas
from ...prompts import render
from .conversation import Conversation
from .planner import plan_recall, recall_meta

CYCLE_OPS = (Op.DRAFT, Op.IMPROVE, Op.EVOLVE)
SELECTED_IDEAS = 3  # ideas one attempt combines: more makes a muddle, fewer a copy
_DONE = re.compile(r"\s*\**DONE\b", re.IGNORECASE)  # a refine reply saying the script is as good as it gets
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
    # Stage III: only the draft in the request (the system turn holds the task and the data),
    # with the memory's records most like the draft (mlguild.brains.llm.planner: no request added).
    recall = plan_recall(context, draft)
    prompt = render("cycle_implement", draft=draft, time_budget_s=common["time_budget_s"], plan_recall=recall)
    plan, code = talk.full_script(prompt, "cycle:implement", node)
    first = next((ln.strip() for ln in draft.splitlines() if ln.strip()), "")
    meta: NodeMeta = {
        "summary": first.removeprefix("Draft:").strip()[:200],
        "model": talk.model,
        "cycle": "community",
        "ideas": cited_ideas(draft, offered),
        "novel": novel_components(draft),
    }
    if recall is not None:
        meta["plan_recall"] = recall_meta(draft, recall)
    return Proposal(plan=f"{draft}\n\n## Implementation\n{plan}", code=code, meta=meta)


def cycle_refine(talk: Conversation, request: FixRequest) -> tuple[str, str] | None:
    """The script of the next step from a step that worked, judged by its own validation
    output (stage III's refine); None when the model answers that it is done."""
    prompt = render(
        "cycle_refine",
        draft=_draft_of(request.plan),
        code=request.code,
        step=request.step,
        trail=list(request.trail),
        printed_score=request.printed_score,
        stdout=request.stdout.strip(),
        stderr=request.stderr.strip(),
        time_budget_s=int(request.timeout_s),
    )
    reply = talk.ask(talk.messages(prompt), "cycle:refine", request.node)
    if "```" not in reply.text and _DONE.match(reply.text):
        return None
    return talk.full_script(prompt, "cycle:refine", request.node, first=reply)


def _draft_of(plan: str) -> str:
    return plan.split("\n\n## Implementation\n", 1)[0]


def cycle_fix(talk: Conversation, request: FixRequest) -> tuple[str, str]:
    """The script of the next step, from what the last one did (stage III's fix)."""
    prompt = render(
        "cycle_fix",
        draft=_draft_of(request.plan),
        code=request.code,
        step=request.step,
        failure=failure_from_node(request.status, request.failure, request.stderr),
        time_budget_s=int(request.timeout_s),
    )
    return talk.full_script(prompt, "cycle:fix", request.node)


# How a dry run's stand-in model (mlguild.launch.entry) knows the cycle's requests that want no
# script: the lines the refine and report prompts end with (prompts/cycle_refine.j2, report.j2).
_REFINE_ASK = "reply with the single word DONE"
_REPORT_ASK = "Write the report of one experiment"


def stand_in_answer(prompt: str) -> str | None:
    """A dry run's stand-in answer to the cycle's requests that want no new script: ``DONE`` to
    a refine request (a stand-in script is as good as it gets, so a node does not refine until
    its time limit) and no report to a report request (the harness's report stands). None for
    any other request: the stand-in writes its script."""
    if _REFINE_ASK in prompt:
        return "DONE: a dry run's stand-in script is not refined."
    if _REPORT_ASK in prompt:
        return "A dry run's stand-in writes no report: the harness's stands."
    return None
