"""Carry an LLM's repair of a recipe script over to the next draft of the same recipe.

In a hybrid run the recipes draft and the LLM repairs. Without this, every fresh draft of a
recipe that crashes on this task's data crashes the same way and costs one more LLM repair.
The repair is the difference between the failed script and its repaired child; it is turned
into SEARCH/REPLACE blocks (each changed span with a few unchanged lines around it, so it
matches in one place) and applied to the new draft. A block that does not match leaves the
draft as the recipe wrote it: a port that only half applies could break more than it fixes.

The repairs come from this run's graph and from earlier runs of the task (the shared memory
keeps each, keyed by task, recipe and what failed: mlguild.memory), so the next run's first
draft of a recipe that crashed on this task's data runs repaired, with no LLM request.
"""

from __future__ import annotations

import difflib

from ..coder.edits import Edit, apply_edits
from ..core.meta import NodeMeta
from ..core.protocols import Context, Proposal

_CONTEXT_LINES = 2


def repair_edits(failed: str, fixed: str) -> list[Edit]:
    """SEARCH/REPLACE blocks that turn ``failed`` into ``fixed``."""
    old, new = failed.splitlines(), fixed.splitlines()
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for group in matcher.get_grouped_opcodes(_CONTEXT_LINES):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        # Each line ends with its newline, as a parsed block's do (apply_edits reads them so).
        search, replace = "".join(f"{ln}\n" for ln in old[i1:i2]), "".join(f"{ln}\n" for ln in new[j1:j2])
        edits.append(Edit(search, replace, index=len(edits) + 1))
    return edits


def port_repair(code: str, failed: str, fixed: str) -> str | None:
    """``code`` with the repair that turned ``failed`` into ``fixed``, or None when the
    repair changes nothing here or does not apply in full."""
    edits = repair_edits(failed, fixed)
    if not edits:
        return None
    result = apply_edits(code, edits)
    if result.failures or result.code.strip() == code.strip():
        return None
    return result.code


def with_repairs(proposal: Proposal, context: Context) -> Proposal:
    """The draft with an earlier repair of its recipe carried over (the newest that applies),
    so the same crash is not drafted and repaired again; unchanged when none applies or it
    carries one already. A repair of an earlier run is named ``RUN/NODE``."""
    if proposal.meta.get("repaired_by"):
        return proposal
    for repair in context.repairs:
        if repair.recipe != proposal.meta.get("recipe"):
            continue
        code = port_repair(proposal.code, repair.failed_code, repair.fixed_code)
        if code is not None:
            where = "an earlier run of this task" if "/" in repair.node_id else "this task"
            note = (
                f"**Repaired in advance:** node `{repair.node_id}` repaired an earlier `{repair.recipe}` "
                f"script on {where}; the same change is applied to this draft.\n"
            )
            meta: NodeMeta = {**proposal.meta, "repaired_by": repair.node_id}
            return Proposal(f"{proposal.plan}\n{note}", code, meta, proposal.title)
    return proposal
