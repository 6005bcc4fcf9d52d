"""Hybrid brain: recipes give the cold-start drafts, the LLM improves and repairs.

If every model of the LLM chain is parked (quota) the run does not stop: the recipes take
over the remaining steps, and the switch is said once on the node's plan.
"""

from __future__ import annotations

from typing import Literal

from ..core.errors import MoveUnavailable, ProposalFailed, StopRun
from ..core.protocols import Action, Brain, Context, Proposal
from ..core.vocabulary import Op
from ..llm.errors import AllModelsExhausted, LLMError
from .llm.brain import LLMBrain
from .llm.review import unreviewed
from .repair_port import with_repairs


class HybridBrain:
    name = "hybrid"
    has_last_resort: Literal[True] = True  # its recipe drafts reach the recipes' safest pipeline

    def __init__(self, recipes: Brain, llm_brain: LLMBrain):
        self.recipes = recipes
        self.llm_brain = llm_brain
        self.llm_down: str | None = None

    def explore(self, context: Context) -> Proposal:
        """The exploratory node is the LLM's alone: the recipes have no exploration to offer."""
        if self.llm_down:
            raise ProposalFailed(f"every LLM is parked: {self.llm_down}; no exploration")
        try:
            return self.llm_brain.explore(context)
        except AllModelsExhausted as exc:
            self.llm_down = str(exc).splitlines()[0]
            raise ProposalFailed(f"every LLM is parked: {self.llm_down}; no exploration") from None

    def summarise_findings(self, context: Context, output: str, failure: str, node: str) -> str | None:
        """The LLM's summary of the exploration's output (``Summariser``); None with every LLM
        parked (the harness's digest serves)."""
        if self.llm_down:
            return None
        try:
            return self.llm_brain.summarise_findings(context, output, failure, node)
        except AllModelsExhausted as exc:
            self.llm_down = str(exc).splitlines()[0]
            return None

    def propose(self, action: Action, context: Context) -> Proposal:
        if action.op == Op.EDA:
            return self.explore(context)
        if action.op == Op.BLEND or self.llm_down:  # a blend needs no LLM
            return self._by_recipes(action, context)
        if action.op == Op.DRAFT:
            try:
                return self._by_recipes(action, context)
            except MoveUnavailable:  # a shape the recipes do not cover: the LLM drafts
                pass
        try:
            return self.llm_brain.propose(action, context)
        except AllModelsExhausted as exc:  # a StopRun for the LLM brain alone; here the recipes carry on
            self.llm_down = str(exc).splitlines()[0]
            note = f"every LLM is parked: {self.llm_down}; the recipes continue"
        except StopRun:
            raise
        except LLMError as exc:  # this request failed for good; the next step tries the LLM again
            note = f"the LLM request failed ({type(exc).__name__}: {exc.message[:200]}); a recipe step instead"
        proposal = self._by_recipes(action, context)
        return Proposal(f"({note})\n\n{proposal.plan}", proposal.code, proposal.meta, proposal.title)

    def review(self, action: Action, context: Context, proposal: Proposal) -> Proposal:
        """The LLM's review of a script it wrote (a recipe's is a template: never reviewed);
        with every LLM parked, the script runs unreviewed (``Reviewer``)."""
        if self.llm_down:
            return proposal
        try:
            return self.llm_brain.review(action, context, proposal)
        except AllModelsExhausted as exc:  # a StopRun for the LLM brain alone; here the run goes on
            self.llm_down = str(exc).splitlines()[0]
            return unreviewed(proposal, f"every LLM is parked: {self.llm_down}")

    def _by_recipes(self, action: Action, context: Context) -> Proposal:
        # The recipe brain improves only what it wrote (it mutates recipe meta); an LLM-written
        # parent is answered with a fresh recipe draft instead.
        if action.op in (Op.IMPROVE, Op.DEBUG, Op.EVOLVE, Op.FUSE) and not all(
            p.meta.get("recipe") for p in context.parents
        ):
            action = Action(Op.DRAFT, (), f"{action.reason} (recipes cannot edit LLM code: fresh draft)")
        proposal = self.recipes.propose(action, context)
        return with_repairs(proposal, context) if action.op == Op.DRAFT else proposal
