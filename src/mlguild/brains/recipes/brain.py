"""RecipeBrain: drafts, improves and debugs solutions from a catalogue of proven recipes.

It needs no LLM and no network, so it is the embedded default and the floor any other
brain must beat. Every choice is a small seeded function of the task, the data profile
and the history, and every proposal carries its full recipe meta so that the next step
(improve, debug, fuse) can work from exact parameters instead of parsing code.
"""

from __future__ import annotations

import copy
import math
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

from ...coder.diagnose import diagnose
from ...core.protocols import LAST_RESORT, Action, Context, ParentView, Proposal
from ...core.titles import title_of
from ...core.vocabulary import FailureKind, Op
from ..repair_port import with_repairs
from .catalog import RECIPES, recipes_for
from .choice import choose, family_order, family_reason
from .draft import draft_meta
from .earlier import earlier_best_lines, earlier_best_meta, next_earlier_best, settings_key
from .fuse import fuse_proposal
from .ideas import cited, idea_hints, with_ideas
from .moves import MOVES, Facts, diff, shrink, undo
from .recipe import RecipeMeta, recipe_meta
from .render import render_script
from .repair import SAFEST, apply_learned, learned, repair_for, repeated_failure, safest_meta, usable_columns
from .supported import check_supported
from .tuning import TUNE, Probe, describe, probe
from .variants import drafted, variants

_SLOW = (FailureKind.TIMEOUT, FailureKind.MEMORY)


class RecipeBrain:
    """Offline brain: ``propose`` returns a plan, a standalone script and the recipe meta."""

    name = "recipes"
    has_last_resort: Literal[True] = True  # the safest pipeline (see repair.safest_meta)

    def __init__(self, seed: int = 0):
        self.seed = seed

    def propose(self, action: Action, context: Context) -> Proposal:
        check_supported(context.task)
        parent = _parent(action, context)
        if action.op in (Op.FUSE, Op.BLEND) and len(context.parents) >= 2:
            return fuse_proposal(context)  # the recipes fuse by blending the members' predictions
        if action.op == Op.DRAFT or parent is None:  # carrying an LLM's repair of its recipe, when one applies
            return with_repairs(self._draft(context), context)
        if action.op == Op.EVOLVE:
            return self._evolve(parent, context)
        if action.op == Op.IMPROVE:
            return self._improve(parent, context)
        if action.op == Op.DEBUG:
            return self._debug(parent, context)
        raise ValueError(f"the recipe brain has no {action.op!r} operation")

    # ------------------------------------------------------------------ operations

    def _draft(self, context: Context, note: str = "") -> Proposal:
        task, profile = context.task, context.profile
        repeated = repeated_failure(context)
        if repeated is not None and not any(h.meta.get(LAST_RESORT) for h in context.history[-3:]):
            # More drafts of the same kind would fail the same way: try the safest pipeline.
            return self._safest(
                context,
                f"The last three nodes failed the same way (`{repeated}`), so this draft is the safest pipeline.",
            )
        earlier = next_earlier_best(context)
        if earlier is not None:  # a second run on this task starts where the earlier ones ended
            lines = earlier_best_lines(earlier, context)
            summary = f"Made again from an earlier run on this task: {earlier.run}/{earlier.node}."
            return self._proposal(lines, summary, earlier_best_meta(earlier, context), context)
        hints = idea_hints(context.ideas)
        names = family_order(recipes_for(task, profile), with_ideas(context.family_priors, hints))
        # Every recipe node made from a family's defaults counts: a draft, a rung of the ladder,
        # and a draft made in place of an improve whose moves were used up (its op says improve).
        drafts = [h.meta for h in context.history if drafted(h.meta)]
        counts = Counter(m.get("recipe") for m in drafts)
        made = {settings_key(h.meta) for h in context.history}
        # Once the history window has dropped a run's first nodes, a family with no draft in it
        # was drafted before it: a 30-minute run drafted its random forest's defaults again 17
        # times, the same script each time, because its first draft had left the window.
        whole = len(context.history) >= context.iteration
        fresh = [
            n for n in names if counts[n] == 0 and whole and settings_key(draft_meta(n, task, profile)) not in made
        ]
        name = fresh[0] if fresh else min(names, key=lambda n: (counts[n], names.index(n)))
        meta = draft_meta(name, task, profile)
        recipe = RECIPES[name]
        lines = [f"## Draft: {recipe.title}", ""]
        if note:
            lines += [note, ""]
        inherited = apply_learned(meta, learned(context.history))
        if inherited:
            lines += [f"**Learned on this task:** {'; '.join(inherited)}.", ""]
        lines += [
            f"**What:** {recipe.title}; {_data_line(task, profile)}; "
            f"{meta['run']['n_folds']}-fold {_folds_line(task)}.",
            f"**Why:** {recipe.why}.",
        ]
        summary = f"Why this recipe: {recipe.why}."
        remembered = family_reason(name, context.family_priors)
        if fresh and remembered:
            lines.append(f"**Why now:** {remembered}.")
        ideas = cited([name], hints, context.family_priors) if fresh else []
        if ideas:
            lines.append(f"**From the community:** [{ideas[0]}] {hints[name][1]}")
            meta["ideas"] = ideas
        if not fresh:
            # Every family has a draft already: vary this one so the new draft is not a copy.
            used = {str(m["move"]) for m in drafts if m.get("recipe") == name and m.get("move")}
            options = variants(meta, recipe, context, used) or variants(meta, recipe, context, set())
            if options:
                chosen, varied = self._rng(context, Op.DRAFT, name).choice(options)
                move = "+".join(m.name for m in chosen)
                varied.update({"move": move, "moves": [move], "changed": diff(meta, varied)})
                lines.append(
                    f"**Variation:** every recipe has a draft already, so this one starts with "
                    f"`{move}` ({_describe(varied['changed'])}): {'; '.join(m.why for m in chosen)}."
                )
                summary += f" Varied from the defaults by {move}."
                meta = varied
        return self._proposal(lines, summary, meta, context)

    def _improve(self, parent: ParentView, context: Context) -> Proposal:
        recipe = RECIPES.get(parent.meta.get("recipe", "")) if parent.meta.get("brain") == "recipes" else None
        if recipe is None:
            return self._draft(
                context,
                f"Parent `{parent.node_id}` was not written by the recipe brain, "
                "so there are no recipe parameters to vary; drafting a recipe instead.",
            )
        tried = {
            str(h.meta["move"])
            for h in context.history
            if h.meta.get("parent") == parent.node_id and h.meta.get("move")
        }
        options: list[tuple[tuple[Any, ...], RecipeMeta]] = list(
            variants(recipe_meta(parent.meta), recipe, context, tried)
        )
        rng = self._rng(context, TUNE, parent.node_id)
        tuned = probe(recipe_meta(parent.meta), recipe, parent.node_id, parent.score, context, rng)
        if tuned is not None and settings_key(tuned) not in {settings_key(h.meta) for h in context.history}:
            options.append(((Probe(),), tuned))
        if not options:
            return self._draft(
                context, f"Every move has been tried on `{parent.node_id}`; drafting a new recipe instead."
            )
        hints = idea_hints(context.ideas)
        (chosen, meta), reason = choose(
            options,
            parent.node_id,
            context,
            self._rng(context, Op.IMPROVE, parent.node_id),
            with_ideas({}, hints),
        )
        name = "+".join(m.name for m in chosen)
        meta.pop("last_resort", None)  # a variation of the safest pipeline is not the safest
        meta.pop("reference", None)  # nor is a variation of a reference model that rung of the ladder
        if name != TUNE:
            meta.pop("tune", None)  # the parent's probe is the parent's
        ideas = cited([m.name for m in chosen], hints, context.move_priors)
        meta.pop("ideas", None)  # the parent's ideas are the parent's
        if ideas:
            meta["ideas"] = ideas
        changed = diff(recipe_meta(parent.meta), meta)
        moves = [*recipe_meta(parent.meta).get("moves", []), name]
        meta.update({"move": name, "parent": parent.node_id, "moves": moves, "changed": changed})
        why = "; ".join(m.why for m in chosen)
        lines = [
            f"## Improve: {name} ({recipe.title})",
            "",
            f"Parent `{parent.node_id}` scored {_score(parent, context)}.",
            "",
            f"**Change:** {_describe(changed)}.",
            f"**Why:** {why}.",
            f"**Why this move now:** {reason}.",
            *([f"**Probe:** {describe(meta)}."] if name == TUNE else []),
            *(f"**From the community:** [{i}] {hints[m.name][1]}" for i, m in _citing(ideas, chosen, hints)),
        ]
        summary = f"{recipe.title}, changed from node {parent.node_id} by {name} ({_describe(changed)}): {why}."
        return self._proposal(lines, summary, meta, context)

    def _evolve(self, parent: ParentView, context: Context) -> Proposal:
        """A stagnant branch's next direction: another model family (one not tried yet, else
        the best-scoring one, never a family whose every node failed), with what repairs
        learned on this task; when no other family is left, a bigger step on this one."""
        task, profile = context.task, context.profile
        own = parent.meta.get("recipe") if parent.meta.get("brain") == "recipes" else None
        best: dict[str, float] = {}
        tries: Counter[str] = Counter()
        failures: Counter[str] = Counter()
        sign = 1.0 if context.direction == "maximize" else -1.0
        for h in context.history:
            name = h.meta.get("recipe")
            if not name or h.meta.get("fuse"):
                continue
            tries[name] += 1
            if h.score is None:
                failures[name] += 1
            else:
                best[name] = max(best.get(name, -math.inf), sign * h.score)
        hints = idea_hints(context.ideas)
        names = [
            n
            for n in family_order(recipes_for(task, context.profile), with_ideas(context.family_priors, hints))
            if n != own and not (tries[n] and failures[n] == tries[n])
        ]
        trajectory = [f"- {line}" for line in context.trajectory[-6:]]
        if not names:
            if own is None:
                return self._draft(context, f"Evolving `{parent.node_id}`: no other recipe is left to try.")
            proposal = self._improve(parent, context)
            note = f"## Evolve: every other recipe failed or is this one, so a further step on `{parent.node_id}`\n\n"
            return Proposal(note + proposal.plan, proposal.code, proposal.meta, title=title_of(note))
        name = min(names, key=lambda n: (tries[n] > 0, -best.get(n, -math.inf), names.index(n)))
        meta = draft_meta(name, task, profile)
        recipe = RECIPES[name]
        inherited = apply_learned(meta, learned(context.history))
        meta.update({"move": "evolve", "moves": ["evolve"], "evolved_from": parent.node_id})
        ideas = cited([name], hints, context.family_priors) if not tries[name] else []
        if ideas:
            meta["ideas"] = ideas
        was = RECIPES[own].title if own in RECIPES else f"node {parent.node_id}'s approach"
        why = (
            "not tried on this task yet"
            if not tries[name]
            else f"its best holdout score here is {sign * best[name]:.5g} after {tries[name]} nodes"
        )
        lines = [
            f"## Evolve: from {was} to {recipe.title}",
            "",
            f"The branch of `{parent.node_id}` stopped improving. What it tried, oldest first:",
            *trajectory,
            "",
            f"**New direction:** {recipe.title} ({why}); {_data_line(task, profile)}.",
            f"**Why:** {recipe.why}.",
        ]
        if inherited:
            lines.append(f"**Learned on this task:** {'; '.join(inherited)}.")
        if ideas:
            lines.append(f"**From the community:** [{ideas[0]}] {hints[name][1]}")
        summary = f"{recipe.title}, evolved from the stagnant branch of {parent.node_id}: {recipe.why}."
        return self._proposal(lines, summary, meta, context)

    def _debug(self, parent: ParentView, context: Context) -> Proposal:
        task, profile = context.task, context.profile
        facts = Facts.of(task, profile)
        own = parent.meta.get("brain") == "recipes" and parent.meta.get("recipe") in RECIPES
        old = recipe_meta(parent.meta) if own else None
        diagnosis = diagnose(parent.failure or parent.stderr_tail, parent.code, usable_columns(profile))
        repair = repair_for(old, diagnosis, usable_columns(profile)) if old is not None else None
        last_move = (old or {}).get("move") or ""
        if old is not None and parent.status in _SLOW:
            meta, move = copy.deepcopy(old), "shrink"
            shrink(meta, RECIPES[old["recipe"]], facts)
            why = (
                f"the run hit its {parent.status} limit, so every costly part is halved: "
                "fewer or cheaper models, fewer folds, smaller feature sets, capped training rows"
            )
        elif old is not None and repair is not None:
            meta, move, why = copy.deepcopy(old), repair.move, repair.why
            repair.apply(meta)
        elif old is not None and old.get("changed") and all(m in MOVES or m == TUNE for m in last_move.split("+")):
            meta, move = copy.deepcopy(old), f"undo_{last_move}"
            undo(meta, old["changed"])
            why = f"the parent's own change ({last_move}) is the likely cause ({diagnosis.summary()}), so it is undone"
        elif old is None or not old["features"].get("safe"):
            meta, move = safest_meta(context), SAFEST
            why = (
                f"{diagnosis.summary()}: no single column or optional step explains it, so this falls back to the "
                "safest pipeline: only the columns it can parse, missing values kept for a model that accepts them, "
                "no optional features"
            )
        else:
            meta, move = safest_meta(context), "safest_shrink"
            shrink(meta, RECIPES[meta["recipe"]], facts)
            why = f"the safest pipeline failed too ({diagnosis.summary()}), so it is retried at half the cost"
        if move not in (SAFEST, "safest_shrink"):
            meta.pop("last_resort", None)
        meta.pop("reference", None)  # a repaired reference model is the brain's script, not the ladder's
        meta.pop("tune", None)  # a repair is not a probe
        same_recipe = old is not None and old["recipe"] == meta["recipe"]
        changed = diff(old, meta) if old is not None and same_recipe else {}
        moves = [*old.get("moves", []), move] if old is not None and same_recipe else [move]
        meta.update({"move": move, "parent": parent.node_id, "changed": changed, "moves": moves})
        recipe = RECIPES[meta["recipe"]]
        lines = [
            f"## Debug: {move} ({recipe.title})",
            "",
            f"**What failed:** node `{parent.node_id}` ended with `{parent.status}`: {_failure_line(parent)}",
            f"**Diagnosis:** {diagnosis.summary()}.",
            f"**Change:** {_describe(changed) if changed else f'a fresh script ({recipe.title}, default settings)'}.",
            f"**Why:** {why}.",
        ]
        summary = f"{recipe.title}, fixing node {parent.node_id} ({parent.status}): {why}."
        return self._proposal(lines, summary, meta, context)

    def _safest(self, context: Context, note: str) -> Proposal:
        meta = safest_meta(context)
        meta.update({"move": SAFEST, "moves": [SAFEST]})
        recipe = RECIPES[meta["recipe"]]
        lines = [
            f"## Draft: the safest pipeline ({recipe.title})",
            "",
            note,
            "",
            "**What:** only the columns it can parse, missing values kept for a model that accepts them, "
            "no optional features; a column that fails to parse is left out instead of failing the script.",
        ]
        return self._proposal(lines, f"{recipe.title}, the safest pipeline: {note}", meta, context)

    # ------------------------------------------------------------------ helpers

    def _proposal(self, lines: list[str], summary: str, meta: RecipeMeta, context: Context) -> Proposal:
        code = render_script(context.task, context.profile, meta, summary)
        return Proposal(plan="\n".join(lines) + "\n", code=code, meta=meta.copy(), title=title_of(lines[0]))

    def _rng(self, context: Context, *key: str) -> random.Random:
        # A string seed hashes the same way in every process (unlike hash()), so runs replay.
        return random.Random(":".join([str(self.seed), str(context.seed), str(context.iteration), *key]))


def _citing(ideas: list[str], chosen: tuple, hints: Mapping[str, tuple[str, str]]) -> list[tuple[str, Any]]:
    """(idea id, move) for each move of ``chosen`` whose idea the node cites."""
    return [(hints[m.name][0], m) for m in chosen if m.name in hints and hints[m.name][0] in ideas]


def _parent(action: Action, context: Context) -> ParentView | None:
    if not context.parents:
        return None
    wanted = action.parents[0] if action.parents else None
    return next((p for p in context.parents if p.node_id == wanted), context.parents[0])


def _describe(changed: dict[str, list[Any]]) -> str:
    parts = []
    for path, (before, after) in changed.items():
        key = path.split(".", 1)[1]
        parts.append(f"`{key}` {before!r} → {after!r}" if before is not None else f"`{key}` = {after!r} (new)")
    return ", ".join(parts) or "no parameter change"


def _data_line(task: dict[str, Any], profile: dict[str, Any]) -> str:
    kinds = Counter(c["kind"] for c in profile.get("columns", []))
    cols = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return f"{task['task_type']} task, {profile.get('n_train', '?')} training rows, columns: {cols or 'none profiled'}"


def _folds_line(task: dict[str, Any]) -> str:
    """How the script validates and predicts, in the plan's words (after "5-fold")."""
    column = task.get("time_column")
    if column:
        return (
            f"time-ordered (expanding-window, by {column!r}) cross-validation, holdout and test predicted "
            "by the latest fold's model"
        )
    return "cross-validation, test predictions averaged over the fold models"


def _score(parent: ParentView, context: Context) -> str:
    if parent.score is None:
        return "nothing (no score)"
    return f"{parent.score:.5g} ({context.task['metric']}, {context.direction})"


def _failure_line(parent: ParentView) -> str:
    text = (parent.failure or parent.stderr_tail or "no message").strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return f"`{lines[-1][:300]}`" if lines else "no message"


__all__ = ["RecipeBrain"]
