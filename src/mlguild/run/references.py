"""The baseline ladder's reference models: scripts the harness writes and runs itself.

Every run measures, beside what its brain finds, two models anyone would try first: a
LightGBM with its defaults and a regularised linear model (one-hot categories, scaled
numbers; TF-IDF for text, scaled pixels for images). They are the recipe catalogue's scripts
with their default settings (``brains/recipes``), run as the first search nodes (after an
exploration) through the one node path: sandboxed, scored on the sealed holdout like any
node, journaled as drafts whose meta names the rung (``reference``). So they count against
the budget like any node, a brain may build on them, and a recipe brain does not draft the
same family again. On a task that earlier runs worked on, a recipe brain's first node makes
their best again (``brains/recipes/earlier``), and the ladder follows it.

Their cost is bounded: each may take at most ``final.reference_time_share`` of the time
budget (at least ``MIN_REFERENCE_S``, never more than any node), and none runs when the iteration budget is under ``MIN_ITERATIONS`` nodes (two
reference nodes would be most of it). A rung a task's shape cannot have (a linear model of a
grouped ranking, any recipe for a shape the recipes do not cover) is skipped, journaled
``reference_skipped`` with the reason (``core/errors.MoveUnavailable``), as is the whole
ladder when the budget is too small. The scripted brain (dry runs, plumbing tests) has none.
"""

from __future__ import annotations

from typing import Any

from ..brains.recipes.catalog import RECIPES, recipe_modality
from ..brains.recipes.draft import draft_meta
from ..brains.recipes.recipe import RecipeMeta
from ..brains.recipes.render import render_script
from ..brains.recipes.supported import check_supported
from ..core.errors import MoveUnavailable
from ..core.protocols import Action, Proposal
from ..core.vocabulary import Event, Op
from ..rundir import events
from .session import Session

RUNGS = ("lightgbm", "linear")  # in the order they run (a recipe brain's own first drafts)
MIN_ITERATIONS = 6
MIN_REFERENCE_S = 30.0  # a short run's reference models still get this long (within the search's limit)
# The recipe family of each rung, per modality (recipes/catalog.py): what "a LightGBM default"
# and "a regularised linear model" are for that kind of input.
FAMILIES: dict[str, dict[str, str]] = {
    "lightgbm": {
        "tabular": "lightgbm",
        "text": "tfidf_lightgbm",
        "image_array": "pixels_lightgbm",
        "image_files": "pixels_lightgbm",
        "grouped_ranking": "lambdarank",
        "ranked_lists": "candidates_lgbm",
        "text_spans": "span_lightgbm",
    },
    "linear": {
        "tabular": "linear",
        "text": "tfidf_linear",
        "image_array": "pixels_linear",
        "image_files": "pixels_linear",
    },
}
NAMES = {"lightgbm": "LightGBM default", "linear": "regularised linear model"}


class References:
    """Which rungs a session still has to run; their proposals, made when chosen."""

    def __init__(self, session: Session):
        self.session = session
        self.ready: dict[str, Proposal] = {}
        self.done = False

    def next_action(self) -> Action | None:
        """The next reference node's action, or None when every rung has run or been
        skipped. Called with the session's lock held, before the policy is asked."""
        if self.done:
            return None
        s = self.session
        config = s.run.config
        if not config.final.reference_models or s.brain.name == "scripted":
            self.done = True
            return None
        if not len(s.state.graph) and s.brain.name in ("recipes", "hybrid") and s.memory.earlier_bests():
            return None  # the first node makes an earlier run's best on this task again (brains/recipes/earlier)
        taken = {str(n.meta.get("reference")) for n in s.state.graph if n.meta.get("reference")}
        taken |= set(self.ready) | {
            str(r["rung"]) for r in s.run.journal.records if r["type"] == Event.REFERENCE_SKIPPED
        }
        iterations = config.budget.iterations
        for rung in RUNGS:
            if rung in taken:
                continue
            try:
                if iterations is not None and iterations < MIN_ITERATIONS:
                    raise MoveUnavailable(
                        f"the iteration budget ({iterations}) is under {MIN_ITERATIONS} nodes: the ladder would take most of it",
                        f"give the run --iterations {MIN_ITERATIONS} or more, or a --time budget",
                    )
                proposal = reference_proposal(rung, s.run.spec.public_dict(), s.contexts.profile)
            except MoveUnavailable as exc:
                events.reference_skipped(s.run.journal, rung, exc.message, exc.fix, s.clock.elapsed())
                continue
            self.ready[rung] = proposal
            return Action(Op.DRAFT, (), f"the baseline ladder's {NAMES[rung]}, run by the harness", reference=rung)
        self.done = True
        return None

    def time_limit(self, timeout: float) -> float:
        """A reference node's time limit: the search's, at most its share of the time budget."""
        budget = self.session.run.config.budget.time_s
        if budget is None:
            return timeout
        return min(timeout, max(MIN_REFERENCE_S, self.session.run.config.final.reference_time_share * budget))

    def proposal(self, action: Action) -> Proposal:
        """The script chosen with ``action`` (``next_action``)."""
        return self.ready[action.reference]


def reference_proposal(rung: str, task: dict[str, Any], profile: dict[str, Any]) -> Proposal:
    """The reference model ``rung`` for a task: the recipe family that stands for it in the
    task's modality, with its default settings. MoveUnavailable when the task has none."""
    modality = recipe_modality(task)
    fix = "the ladder shows this rung as skipped; nothing to do"
    name = FAMILIES[rung].get(modality)
    if name is None:
        raise MoveUnavailable(f"no {NAMES[rung]} for a {modality} task", fix)
    if not RECIPES[name].available():
        raise MoveUnavailable(f"{name} needs {RECIPES[name].needs}, which is not installed", fix)
    check_supported(task)  # a shape the recipe scripts cannot fill
    meta: RecipeMeta = {**draft_meta(name, task, profile), "reference": rung}
    recipe = RECIPES[name]
    summary = f"The baseline ladder's {NAMES[rung]}: {recipe.title}, default settings."
    plan = (
        f"## Reference model: {NAMES[rung]}\n\n{summary} The harness runs it on every run, so that "
        "what the search finds can be read against what anyone would try first.\n"
    )
    code = render_script(task, profile, meta, summary)
    return Proposal(plan, code, meta, title=f"Reference: {NAMES[rung]} ({name})")
