"""The LLM brain: prompts from templates, code through the Coder, every failure named.

Context isolation (CoMind's lesson): an implementation prompt sees the task summary, the data
summary and the current plan or parent code — never the whole history — so prompt size stays
bounded however long the run. Only the draft prompt gets a short list of what was tried.

What every request of a run shares (the role, the task summary, the brief, the data summary,
the script contract, then the exploration's summary) is the system turn, word for word the same
each time, so a provider's prompt cache reads it instead of billing it again; the user turn
carries only what this request is about. Every request from the exploration on starts with it:
the exploration's and its summary's with the text before the findings, every later one with the
findings appended (the one prefix grows once). Three requests, all made before the exploration,
have no such turn, because they write parts of it or would pay more with it: the brief's
(mlguild.task.brief: the brief is in the turn), a long description's summary (``_task_summary``:
it is in the turn too) and the knowledge items' idea extraction (mlguild.pools: it reads one
item against a one-line task; the whole prefix would bill it more than its own prompt).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from typing import Any, Literal

from ...coder import (
    apply_edits,
    extract_code,
    failure_from_node,
    parse_edits,
    should_fallback_to_rewrite,
)
from ...coder.stepwise import STEP_ORDER, assemble_parts
from ...config import BrainConfig, Config
from ...config.llm import LLMConfig
from ...core.meta import NodeMeta
from ...core.protocols import Action, Context, FixRequest, ParentView, Proposal, ReportRequest, WrittenReport
from ...core.score import POOLED_LABEL
from ...core.titles import title_of
from ...core.vocabulary import Op
from ...llm.base import LLM, Message
from ...memory.priors import prior_lines
from ...metrics import per_column
from ...pools.ideas import cited_ideas
from ...prompts import prediction_help, render
from ...sandbox import backbones
from ...sandbox.namespace import gpu_devices
from ...task.brief import split_findings
from ...task.profile import DataProfile, summary_text
from ..recipes.fuse import fuse_proposal
from .conversation import Conversation, RequestOptions
from .cycle import CYCLE_OPS, cycle_fix, cycle_proposal, cycle_refine
from .findings import summarise
from .planner import plan_recall, recall_meta, revised_plan
from .report import write_report
from .review import edited_parent, needs_review, skip_reason, skipped
from .review import review as review_script

_SUMMARY_THRESHOLD = 2500  # shorter descriptions are used as they are (no summary call)
_TRIED_LIMIT = 12
STEP_HELP = {
    "data": "load the data files, define the id/target columns and the validation split",
    "features": "feature engineering and preprocessing shared by train, holdout and test",
    "model": "the model(s) and their hyperparameters",
    "train": "training with validation (print `cv_score: <number>`)",
    "predict": "predicting holdout and test rows and writing output/holdout.csv and output/submission.csv",
}


@dataclass
class LLMBrainOptions:
    """What the LLM brain takes from the configuration: its requests (``llm:``) and its
    style (``brain:``). The defaults are those sections' defaults."""

    max_tokens: int = LLMConfig.model_fields["max_tokens"].default
    temperature: float = LLMConfig.model_fields["temperature"].default
    timeout_s: float = LLMConfig.model_fields["timeout_s"].default  # one request's wall-clock limit
    diff_mode: bool = BrainConfig.model_fields["diff_mode"].default  # improve with SEARCH/REPLACE edits
    stepwise: bool = BrainConfig.model_fields["stepwise"].default  # drafts part by part
    threads: int = 2
    gpu: bool = False  # scripts can use a GPU (the prompt says so)
    cycle: bool = False  # the community cycle (mlguild.brains.llm.cycle) for drafts, improves, evolves
    # The LLM reviews its scripts before they run (mlguild.brains.llm.review): a run's brain
    # follows brain.review; a brain built by hand reviews only when asked.
    review: bool = False

    @classmethod
    def from_config(cls, config: Config, threads: int) -> LLMBrainOptions:
        llm, brain = config.llm, config.brain
        gpu = config.sandbox.gpu if config.sandbox.gpu is not None else bool(gpu_devices())
        return cls(
            llm.max_tokens,
            llm.temperature,
            llm.timeout_s,
            brain.diff_mode,
            brain.stepwise,
            threads,
            gpu,
            cycle=brain.cycle == "community",
            review=brain.review,
        )


# Libraries beyond the [ml] extra that a script may use when this environment has them.
_OPTIONAL_LIBRARIES = ("torch", "torchvision", "transformers", "sentence_transformers")


def _extra_libraries() -> list[str]:
    """The optional libraries scripts can import here (they run with this interpreter)."""
    return [name for name in _OPTIONAL_LIBRARIES if importlib.util.find_spec(name) is not None]


def stagnation_tier(stagnation: int) -> int:
    """1: tune; 2: change a component; 3: change the paradigm (MLEvolve's escalation)."""
    return 1 if stagnation < 2 else 2 if stagnation < 4 else 3


class LLMBrain:
    """Proposes every node by asking its LLM; it also explores (``Explorer``), fixes the
    community cycle's failed steps (``Fixer``), refines its working ones (``Refiner``), writes
    its nodes' reports (``Reporter``) and may be asked by several workers at once
    (``Concurrent``): what it caches is the same whoever fills it."""

    name = "llm"
    concurrent: Literal[True] = True

    def __init__(self, llm: LLM, options: LLMBrainOptions | None = None):
        self.llm = llm
        self.options = options or LLMBrainOptions()
        request = RequestOptions(self.options.max_tokens, self.options.temperature, self.options.timeout_s)
        self.talk = Conversation(llm, request)
        self._summary: str | None = None
        self._system_brief: str | None = None  # the system turn is rendered again when the brief changes

    # --- entry points ---
    def explore(self, context: Context) -> Proposal:
        """The exploratory script (``Op.EDA``): its findings go into the brief."""
        node = f"n{context.iteration + 1:04d}"
        common = self._prepare(context)
        plan, code = self.talk.full_script(render("eda", **common), "eda", node)
        return Proposal(
            plan=plan,
            code=code,
            meta={"summary": "exploratory data analysis", "model": self.llm.model},
            title=title_of(plan) or "Exploratory data analysis",
        )

    def propose(self, action: Action, context: Context) -> Proposal:
        if action.op == Op.BLEND:  # a blend fitted on out-of-fold predictions needs no LLM
            return fuse_proposal(context)
        node = f"n{context.iteration + 1:04d}"
        common = {**self._prepare(context), "op": str(action.op)}
        if action.op == Op.EDA:
            return self.explore(context)
        recalled: dict[str, Any] | None = None  # what the planner's memory showed (mlguild.brains.llm.planner)
        if self.options.cycle and action.op in CYCLE_OPS:  # select ideas, draft, implement (mlguild.brains.llm.cycle)
            return cycle_proposal(self.talk, action, context, common, node)
        if action.op == Op.FUSE:  # one script from the best ideas of several branches
            plan, code = self.talk.full_script(render("fuse", **common, parents=list(context.parents)), "fuse", node)
        elif action.op == Op.EVOLVE:  # a new direction for a stagnant branch, from its trajectory
            parent = context.parents[0]
            score = f"{parent.score:.6g}" if parent.score is not None else "—"
            prompt = render("evolve", **common, parent=parent, parent_score=score, trajectory=context.trajectory)
            plan, code = self.talk.full_script(prompt, "evolve", node)
        elif action.op == Op.DEBUG:
            parent = context.parents[0]
            failure = failure_from_node(parent.status, parent.failure, parent.stderr_tail)
            prompt = render("debug", **common, parent=parent, failure=failure)
            plan, code = self.talk.full_script(prompt, "debug", node)
        elif action.op == Op.IMPROVE:
            parent = context.parents[0]
            plan, code = self._improve(common, parent, context, node)
        else:
            # The exploration is in the brief: its node is not an approach that was tried.
            tried = [_tried_line(h) for h in context.history if h.op != Op.EDA][-_TRIED_LIMIT:]
            if self.options.stepwise:
                plan, code, recalled = self._stepwise(common, tried, node, context)
            else:
                plan, code = self.talk.full_script(render("draft", **common, tried=tried), "draft", node)
        title = title_of(plan)
        meta: NodeMeta = {"summary": title or _first_line(plan), "model": self.llm.model}
        used = cited_ideas(plan, context.ideas)
        if used:
            meta["ideas"] = used
        if recalled is not None:
            meta["plan_recall"] = recalled
        return Proposal(plan=plan, code=code, meta=meta, title=title)

    def review(self, action: Action, context: Context, proposal: Proposal) -> Proposal:
        """``proposal`` reviewed before it runs (and revised once for a serious finding), when
        reviews are on and an LLM wrote it; otherwise unchanged (``Reviewer``)."""
        if not self.options.review or not needs_review(action, proposal):
            return proposal
        if (why := skip_reason(action, context, proposal)) is not None:  # a small edit: not worth a request
            return skipped(proposal, why)
        self._prepare(context)  # the review and the revision start with the system turn
        # The planner's memory, asked with the script's own plan: the review weighs the plan
        # against it, in the request it makes anyway (mlguild.brains.llm.planner).
        recall = None if "plan_recall" in proposal.meta else plan_recall(context, proposal.plan)
        node, parent = f"n{context.iteration + 1:04d}", edited_parent(action, context)
        reviewed = review_script(self.talk, context, proposal, node, recall, parent)
        if recall is None:
            return reviewed
        return replace(reviewed, meta={**reviewed.meta, "plan_recall": recall_meta(proposal.plan, recall)})

    def fix_step(self, request: FixRequest) -> tuple[str, str]:
        """A failed step of the community cycle's refine loop, repaired: (why, the script fixed)."""
        return cycle_fix(self.talk, request)

    def refine_step(self, request: FixRequest) -> tuple[str, str] | None:
        """A step of the cycle's loop that worked, improved from its own validation output, or
        None when the model judges it done (``Refiner``)."""
        return cycle_refine(self.talk, request)

    def write_report(self, request: ReportRequest) -> WrittenReport | None:
        """The model's report of a community-cycle node (``Reporter``); None without the cycle."""
        if not self.options.cycle:
            return None
        return write_report(self.talk, request)

    def summarise_findings(self, context: Context, output: str, failure: str, node: str) -> str | None:
        """The model's summary of what the exploratory ``node`` printed, for the brief, or None
        when its reply is not one (``Summariser``). ``context``: the exploration's, so the request
        starts with the prefix the exploration's own request did."""
        self._prepare(context)
        return summarise(self.talk, output, failure, node)

    # --- prompts ---
    def _prepare(self, context: Context) -> dict:
        """The variables every prompt of ``context`` shares; the system turn is rendered from
        them once, and again only when the brief changed (the exploration's findings)."""
        common = self._common(context)
        if self.talk.system is None or self._system_brief != context.brief:
            self._system_brief = context.brief
            self.talk.system = render(
                "system",
                **common,
                threads=self.options.threads,
                gpu=self.options.gpu,
                extra_libraries=", ".join(_extra_libraries()),
            )
        return common

    def _common(self, context: Context) -> dict:
        task = context.task
        profile = DataProfile.from_dict(context.profile)
        brief, findings = split_findings(context.brief)  # the findings last in the system turn
        return dict(
            task=task,
            task_summary=self._task_summary(context, profile),
            data_summary=summary_text(profile, max_columns=40) + _backbones_line(task),
            prediction_help=prediction_help(task),
            time_budget_s=int(context.script_timeout_s),
            rows={"train": profile.n_train, "holdout": profile.n_holdout, "test": profile.n_test},
            leaders=context.leaders,
            recall=context.recall,
            priors=prior_lines(context.family_priors, context.move_priors),
            brief=brief,
            findings=findings,
            reports=context.reports,
            ideas=context.ideas,
            why=context.why,
            noise=context.noise,
            full_limit_s=context.full_limit_s,
            sample_rows={"train": context.train_rows, "of": profile.n_train} if context.train_rows else None,
            column_metric=per_column(str(task.get("metric", ""))),
        )

    def _task_summary(self, context: Context, profile: DataProfile) -> str:
        if self._summary is None:
            if len(context.description) <= _SUMMARY_THRESHOLD:
                self._summary = context.description.strip()
            else:  # once per run (and cached across resumes by the LLM cache)
                prompt = render(
                    "task_summary",
                    description=context.description,
                    data_summary=summary_text(profile, max_columns=40),
                    max_words=250,
                )
                self._summary = self.talk.ask([Message("user", prompt)], "task_summary", "").text.strip()
        return self._summary

    # --- improve: diff edits with re-prompts, then a full rewrite ---
    def _improve(self, common: dict, parent: ParentView, context: Context, node: str) -> tuple[str, str]:
        stagnation = context.stagnation
        score = f"{parent.score:.6g}" if parent.score is not None else "—"
        variables = dict(
            common, parent=parent, parent_score=score, tier=stagnation_tier(stagnation), stagnation=stagnation
        )
        if not self.options.diff_mode:
            return self.talk.full_script(render("improve", **variables, diff_mode=False), "improve", node)
        messages = self.talk.messages(render("improve", **variables, diff_mode=True))
        code, attempts = parent.code, 0
        while True:
            reply = self.talk.ask(messages, "improve:diff" if attempts == 0 else "improve:diff_retry", node)
            edits = parse_edits(reply.text)
            if not edits:  # the model answered with a whole script instead: accept it if it is one
                extraction = extract_code(reply.text, reply.finish_reason)
                if extraction.ok:
                    return extraction.plan or "(no plan given)", extraction.code or ""
                break
            result = apply_edits(code, edits)
            code = result.code
            plan = _prose_before_edits(reply.text)
            if result.ok:
                return plan or "(no plan given)", code
            attempts += 1
            if should_fallback_to_rewrite(attempts, result.failures, len(edits)):
                break
            mismatch = result.failure()  # its detail is the retry prompt, naming each block that failed
            assert mismatch is not None
            messages = [*messages, Message("assistant", reply.text), Message("user", mismatch.detail)]
        return self.talk.full_script(render("improve", **variables, diff_mode=False), "improve:rewrite", node)

    # --- stepwise drafts ---
    def _stepwise(
        self, common: dict, tried: list[str], node: str, context: Context
    ) -> tuple[str, str, dict[str, Any] | None]:
        """(plan, script, what the planner's memory showed): the plan request, the memory
        asked with the plan, then one request per part, the first carrying the records and
        revising the plan from them (no request added: mlguild.brains.llm.planner)."""
        plan_prompt = render("draft", **common, tried=tried) + (
            "\nFor now, reply with the plan only (no code): model, features, validation, in 3-6 sentences."
        )
        plan = self.talk.ask(self.talk.messages(plan_prompt), "draft:plan", node).text.strip()
        recall = plan_recall(context, plan)
        recalled = recall_meta(plan, recall) if recall is not None else None
        parts: dict[str, str] = {}
        for step in STEP_ORDER:
            first = not parts
            prompt = render(
                "step",
                **common,
                plan=plan,
                previous=assemble_parts(parts) if parts else "",
                step=step,
                step_help=STEP_HELP[step],
                plan_recall=recall if first else None,
            )
            prose, code = self.talk.full_script(prompt, f"draft:{step}", node)
            if first and recall is not None:
                plan = revised_plan(plan, prose)
            parts[step] = code
        return plan, assemble_parts(parts), recalled


def _tried_line(item) -> str:
    """One earlier node: its title (whole), and its score or its failure with the error's last line."""
    what = item.title or item.meta.get("summary") or item.meta.get("recipe") or item.op
    if item.score is not None:
        return f"{item.node_id} {what} -> {item.score:.5g}" + (f" ({POOLED_LABEL})" if item.pooled else "")
    last = ((item.failure or "").strip().splitlines() or [""])[-1][:200]
    return f"{item.node_id} {what} -> failed ({item.status}){': ' + last if last else ''}"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip(" #*-")
        if line:
            return line[:120]
    return ""


def _prose_before_edits(text: str) -> str:
    head = text.split("<<<<<<< SEARCH", 1)[0]
    return head.replace("```python", "").replace("```", "").strip()


def _backbones_line(task: dict) -> str:
    """For a task of images, text or sound: one line on the pretrained backbones a script may
    load offline, and the device it has ("" for plain tables, where neither helps)."""
    if task.get("modality", "tabular") == "tabular" and not task.get("text_columns"):
        return ""
    return "\n" + backbones.prompt_line() + " Device: os.environ['MLGUILD_DEVICE'] is 'cuda' (use it) or 'cpu'."
