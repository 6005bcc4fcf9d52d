"""The LLM's code review of a script before it spends its budget, and the one revision a
serious finding earns it.

A review pays where a script is new: a draft, a fuse, a large rewrite. A small edit of a
working script (at most ``SMALL_EDIT_LINES`` lines, a SEARCH/REPLACE improve's usual size) is not
reviewed unless the branch's last node failed: its record says ``skipped`` and why. A script
is read against the script contract by one request that starts with the brain's system turn
(the run's stable prefix: task, brief, data, contract, served by the provider's prompt cache)
and asks, in ``prompts/review.j2``, the contract's checks of the numbered script, or of an
edit only the sections it touched, whole (mlguild.coder.sections): leakage in its validation,
contract breaks, wasted time. The reply is a list of findings, one line each
(``FINDING: serious | name | line | why``) and a verdict. A serious finding sends the
script back once (``prompts/revise.j2``, through the brain's conversation, so it sees the
whole contract) and the revised script is what runs; it is not reviewed again.

What happened is the proposal's ``meta["review"]``, journaled with the node
(``node_started``): the findings, the status (``passed``, ``revised``, ``revision_failed``,
``unreviewed`` or ``skipped``), what it read (``scope``: ``script`` or ``change``), the
revision's diff and the requests' tokens and cost. The requests go through the run's LLM
like any other, so they are cached and in the ledger (purposes
``review`` and ``revise``). A reply that cannot be read (truncated, garbage, hostile) never
stops a run: the script runs unreviewed, and the record says why.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ...coder.sections import change, change_view
from ...core.errors import StopRun
from ...core.meta import NodeMeta
from ...core.protocols import Action, Context, ParentView, Proposal
from ...core.vocabulary import Op
from ...llm.base import Completion, Message
from ...prompts import render
from .conversation import Conversation

if TYPE_CHECKING:
    from ...memory import Recall

SERIOUS, MINOR = "serious", "minor"
MAX_FINDINGS = 12  # a longer list is not a review any more: the rest are dropped
REVIEW_MAX_TOKENS = 1500  # a review is a few lines; a long reply is cut, then unreadable
SMALL_EDIT_LINES = 40  # an edit of a working script this small is not worth a review request
_CHANGE_SHARE = 0.6  # an edit touching more of the script than this is reviewed as a whole script
_FINDING = re.compile(
    r"^\W*FINDING\W*\s*(serious|minor)\s*\|\s*([A-Za-z][\w\- ]{0,60}?)\s*\|\s*(\d+|-|none|n/a)?\s*\|\s*(.+)$",
    re.IGNORECASE,
)
_VERDICT = re.compile(r"^\W*VERDICT\W*\s*(pass|revise)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    """One problem a review found: ``severity`` serious (the script goes back for a revision)
    or minor (kept on the record), a short snake_case ``name``, the ``line`` it cites (None
    when it cites none, or a line the script does not have) and ``why`` in one sentence."""

    severity: str
    name: str
    line: int | None
    why: str


def parse_review(text: str, n_lines: int) -> list[Finding] | None:
    """The findings of a review reply, or None when the reply is not a review (no verdict
    and no finding line): the script then runs unreviewed. At most ``MAX_FINDINGS``; a
    cited line outside the script's ``n_lines`` is dropped (kept as None)."""
    findings: list[Finding] = []
    verdict = None
    for raw in text.splitlines():
        line = raw.strip()
        if (match := _FINDING.match(line)) is not None:
            severity, name, cited, why = match.groups()
            number = int(cited) if cited and cited.isdigit() else None
            name = re.sub(r"[^a-z0-9_]+", "_", name.strip().lower()).strip("_")[:40] or "unnamed"
            findings.append(
                Finding(severity.lower(), name, number if number and 1 <= number <= n_lines else None, why[:300])
            )
        elif (found := _VERDICT.match(line)) is not None:
            verdict = found.group(1).lower()
    if verdict is None and not findings:
        return None
    return findings[:MAX_FINDINGS]


def needs_review(action: Action, proposal: Proposal) -> bool:
    """Only scripts an LLM wrote for a scored node are reviewed: not the harness's templates
    (a recipe, a blend, a re-run), not an exploration (it is scored by nothing)."""
    return (
        action.op not in (Op.EDA, Op.BLEND, Op.RERUN)
        and bool(proposal.code.strip())
        and bool(proposal.meta.get("model"))
        and proposal.meta.get("brain") != "recipes"
    )


def edited_parent(action: Action, context: Context) -> ParentView | None:
    """The one parent ``action`` edits (an improve, a repair, an evolve), or None (a draft,
    a fuse of several: a new script)."""
    if action.op in (Op.IMPROVE, Op.DEBUG, Op.EVOLVE) and len(context.parents) == 1 and context.parents[0].code:
        return context.parents[0]
    return None


def skip_reason(action: Action, context: Context, proposal: Proposal) -> str | None:
    """Why ``proposal`` is not worth a review (a small edit of a working script on a branch
    whose last node did not fail), or None: it is reviewed."""
    parent = edited_parent(action, context)
    if parent is None or parent.branch_last_failed or parent.score is None:
        return None
    size = change(parent.code, proposal.code).lines
    if size > SMALL_EDIT_LINES:
        return None
    return f"a small edit ({size} lines) of a working script, on a branch whose last node did not fail"


def skipped(proposal: Proposal, why: str) -> Proposal:
    """``proposal`` unchanged, with the record saying why no review was asked for."""
    record = {"status": "skipped", "note": why[:300], "findings": [], **_cost([])}
    return replace(proposal, meta={**proposal.meta, "review": record})


def numbered(code: str) -> str:
    """The script with its line numbers, so the review can cite them."""
    return "\n".join(f"{i:4d}| {line}" for i, line in enumerate(code.splitlines(), 1))


def unreviewed(proposal: Proposal, why: str, spent: list[Completion] | None = None) -> Proposal:
    """``proposal`` unchanged, with the record saying why it runs unreviewed."""
    record: dict[str, Any] = {"status": "unreviewed", "note": why[:300], "findings": []}
    return replace(proposal, meta={**proposal.meta, "review": {**record, **_cost(spent or [])}})


def review(
    talk: Conversation,
    context: Context,
    proposal: Proposal,
    node: str,
    recall: Recall | None = None,
    parent: ParentView | None = None,
) -> Proposal:
    """``proposal`` reviewed (and revised once when a finding is serious), with its record
    in ``meta["review"]``. ``recall``: the memory's records most like its plan (a plan that
    repeats a recorded failure is a serious finding; mlguild.brains.llm.planner). Never raises
    but a StopRun (a spent budget, every model parked): whatever else goes wrong, the script
    runs unreviewed and the record says why. ``parent``: the script ``proposal`` edits; the
    review then reads the sections the edit touched (unless it rewrote most of the script)."""
    spent: list[Completion] = []
    view = change_view(parent.code, proposal.code) if parent is not None else ""
    scope = "change" if view and _share(parent, proposal) <= _CHANGE_SHARE else "script"
    try:
        reply = talk.ask(
            _review_messages(talk, context, proposal, recall, view if scope == "change" else ""), "review", node
        )
    except StopRun:
        raise
    except Exception as exc:  # a failed request must not cost the node its script
        return unreviewed(proposal, f"the review request failed: {type(exc).__name__}: {exc}"[:300])
    spent.append(reply)
    if reply.truncated:
        return unreviewed(proposal, "the review reply was cut off at its token limit", spent)
    findings = parse_review(reply.text, len(proposal.code.splitlines()))
    if findings is None:
        return unreviewed(proposal, "the review reply had no FINDING or VERDICT line", spent)
    record: dict[str, Any] = {"findings": [asdict(f) for f in findings], "scope": scope}
    serious = [f for f in findings if f.severity == SERIOUS]
    if not serious:
        return replace(proposal, meta={**proposal.meta, "review": {"status": "passed", **record, **_cost(spent)}})
    try:
        prompt = render("revise", code=proposal.code, findings=serious)
        # through the brain's conversation: its system turn holds the whole contract
        plan, code = talk.full_script(prompt, "revise", node, spent=spent)
    except StopRun:
        raise
    except Exception as exc:  # the revision failed: the script as it was, said so
        why = f"the revision failed ({type(exc).__name__}: {str(exc)[:200]}); the script runs as first written"
        meta: NodeMeta = {
            **proposal.meta,
            "review": {"status": "revision_failed", **record, "note": why, **_cost(spent)},
        }
        return replace(proposal, meta=meta)
    diff = "".join(
        difflib.unified_diff(
            proposal.code.splitlines(keepends=True), code.splitlines(keepends=True), "first.py", "revised.py", n=1
        )
    )
    record.update(status="revised", diff=diff[:20_000], **_cost(spent))
    revised_plan = f"{proposal.plan.rstrip()}\n\n## Revised after review\n\n{plan.strip()}\n"
    return Proposal(revised_plan, code, {**proposal.meta, "review": record}, proposal.title)


def _share(parent: ParentView | None, proposal: Proposal) -> float:
    """How much of ``proposal``'s script the edit of ``parent`` touched (1.0: all of it)."""
    if parent is None:
        return 1.0
    lines = max(len(proposal.code.splitlines()), 1)
    return sum(b - a + 1 for a, b in change(parent.code, proposal.code).sections) / lines


def _review_messages(
    talk: Conversation, context: Context, proposal: Proposal, recall: Recall | None, view: str
) -> list[Message]:
    """The brain's system turn (the run's stable prefix), then the review's own request."""
    prompt = render(
        "review",
        task=context.task,
        time_budget_s=int(context.script_timeout_s),
        plan=proposal.plan.strip()[:1500],
        script="" if view else numbered(proposal.code),
        change=view,
        lines=len(proposal.code.splitlines()),
        records=recall.lines() if recall else [],
    )
    return talk.messages(prompt)


def _cost(spent: list[Completion]) -> dict[str, Any]:
    return {
        "requests": len(spent),
        "tokens": sum(c.input_tokens + c.output_tokens for c in spent),
        "cost_usd": round(sum(c.cost_usd for c in spent), 6),
    }
