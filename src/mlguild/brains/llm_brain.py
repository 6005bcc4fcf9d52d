"""The LLM brain: prompts from templates, code through the Coder, every failure named.

Context isolation (CoMind's lesson): an implementation prompt sees the task summary, the data
summary and the current plan or parent code — never the whole history — so prompt size stays
bounded however long the run. Only the draft prompt gets a short list of what was tried.

What every request of a run shares (the role, the task summary, the data summary, the script
contract) is the system turn, word for word the same each time, so a provider's prompt cache
reads it instead of billing it again; the user turn carries only what this request is about.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from ..coder import (
    MAX_CONTINUATIONS,
    CoderFailure,
    apply_edits,
    continue_prompt,
    extract_code,
    failure_from_node,
    join_continuation,
    parse_edits,
    should_fallback_to_rewrite,
)
from ..coder.stepwise import STEP_ORDER, assemble_parts
from ..config import BrainConfig, Config
from ..llm.base import LLM, Completion, Message
from ..llm.config import LLMConfig
from ..pools.ideas import cited_ideas
from ..profile import DataProfile, summary_text
from ..prompting import prediction_help, render
from ..protocols import Action, Context, ParentView, Proposal
from ..sandbox.namespace import gpu_devices
from ..titles import title_of
from ..vocabulary import EDA
from .cycle import CYCLE_OPS, cycle_fix, cycle_proposal
from .recipes.fuse import fuse_proposal

_SUMMARY_THRESHOLD = 2500  # shorter descriptions are used as they are (no summary call)
_TRIED_LIMIT = 12
_FORMAT_REMINDER = (
    "Your reply had no Python code. Reply again with a short plan and the complete "
    "script in a single ```python fenced block."
)
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
    cycle: bool = False  # the community cycle (mlguild.brains.cycle) for drafts, improves, evolves

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
    name = "llm"
    explores = True  # it writes the exploratory node (mlguild.vocabulary.EDA) when asked

    # Two workers may ask at once (mlguild.workers): what it caches is the same whoever fills it.
    concurrent = True

    def __init__(self, llm: LLM, options: LLMBrainOptions | None = None):
        self.llm = llm
        self.options = options or LLMBrainOptions()
        self._summary: str | None = None
        self._system: str | None = None  # the same text for every request (for prompt caches)...
        self._system_brief: str | None = None  # ... until the brief changes (the exploration's findings)

    # --- entry point ---
    def propose(self, action: Action, context: Context) -> Proposal:
        if action.op == "blend":  # a blend fitted on out-of-fold predictions needs no LLM
            return fuse_proposal(context)
        node = f"n{context.iteration + 1:04d}"
        common = self._common(context)
        if self._system is None or self._system_brief != context.brief:
            self._system_brief = context.brief
            self._system = render(
                "system",
                **common,
                threads=self.options.threads,
                gpu=self.options.gpu,
                extra_libraries=", ".join(_extra_libraries()),
            )
        if action.op == EDA:  # an exploratory script: its findings go into the brief
            plan, code = self._full_script(render("eda", **common), "eda", node)
            return Proposal(
                plan=plan,
                code=code,
                meta={"summary": "exploratory data analysis", "model": self.llm.model},
                title=title_of(plan) or "Exploratory data analysis",
            )
        if self.options.cycle and action.op in CYCLE_OPS:  # select ideas, draft, implement (mlguild.brains.cycle)
            return cycle_proposal(self, action, context, common, node)
        if action.op == "fuse":  # one script from the best ideas of several branches
            plan, code = self._full_script(render("fuse", **common, parents=list(context.parents)), "fuse", node)
        elif action.op == "evolve":  # a new direction for a stagnant branch, from its trajectory
            parent = context.parents[0]
            score = f"{parent.score:.6g}" if parent.score is not None else "—"
            prompt = render("evolve", **common, parent=parent, parent_score=score, trajectory=context.trajectory)
            plan, code = self._full_script(prompt, "evolve", node)
        elif action.op == "debug":
            parent = context.parents[0]
            failure = failure_from_node(parent.status, parent.failure, parent.stderr_tail)
            prompt = render("debug", **common, parent=parent, failure=failure)
            plan, code = self._full_script(prompt, "debug", node)
        elif action.op == "improve":
            parent = context.parents[0]
            plan, code = self._improve(common, parent, context, node)
        else:
            tried = [_tried_line(h) for h in context.history[-_TRIED_LIMIT:]]
            if self.options.stepwise:
                plan, code = self._stepwise(common, tried, node)
            else:
                plan, code = self._full_script(render("draft", **common, tried=tried), "draft", node)
        meta: dict[str, object] = {"summary": _first_line(plan), "model": self.llm.model}
        used = cited_ideas(plan, context.ideas)
        if used:
            meta["ideas"] = used
        return Proposal(plan=plan, code=code, meta=meta, title=title_of(plan))

    def fix_step(
        self, plan: str, code: str, status: str, failure: str, stderr: str, step: int, timeout_s: float, node: str
    ) -> tuple[str, str]:
        """One step of the community cycle's run-observe-fix loop: the script fixed."""
        return cycle_fix(self, plan, code, status, failure, stderr, step, timeout_s, node)

    # --- prompts ---
    def _common(self, context: Context) -> dict:
        task = context.task
        profile = DataProfile.from_dict(context.profile)
        return dict(
            task=task,
            task_summary=self._task_summary(context, profile),
            data_summary=summary_text(profile, max_columns=40),
            prediction_help=prediction_help(task),
            time_budget_s=int(context.script_timeout_s),
            rows={"train": profile.n_train, "holdout": profile.n_holdout, "test": profile.n_test},
            leaders=context.leaders,
            recall=context.recall,
            brief=context.brief,
            reports=context.reports,
            ideas=context.ideas,
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
                self._summary = self._ask([Message("user", prompt)], "task_summary", "").text.strip()
        return self._summary

    def _messages(self, prompt: str) -> list[Message]:
        assert self._system is not None, "propose() renders the system turn first"
        return [Message("system", self._system), Message("user", prompt)]

    def _ask(self, messages: list[Message], purpose: str, node: str) -> Completion:
        return self.llm.complete(
            messages,
            max_tokens=self.options.max_tokens,
            temperature=self.options.temperature,
            timeout_s=self.options.timeout_s,
            purpose=purpose,
            node=node,
        )

    # --- a whole script, completing truncated replies instead of re-deriving them ---
    def _full_script(self, prompt: str, purpose: str, node: str) -> tuple[str, str]:
        messages = self._messages(prompt)
        reply = self._ask(messages, purpose, node)
        extraction = extract_code(reply.text, reply.finish_reason)
        if extraction.failure and extraction.failure.kind == "no_code":
            messages = messages + [Message("assistant", reply.text), Message("user", _FORMAT_REMINDER)]
            reply = self._ask(messages, f"{purpose}:reformat", node)
            extraction = extract_code(reply.text, reply.finish_reason)
        plan = extraction.plan
        for _ in range(MAX_CONTINUATIONS):
            if not (extraction.failure and extraction.failure.kind == "truncated"):
                break
            partial = extraction.partial or ""
            # The context is the prompt plus the code so far, not every earlier reply: it stays
            # within small context windows however many continuations it takes.
            so_far = Message("assistant", f"{plan}\n\n```python\n{partial}")
            reply = self._ask(
                messages + [so_far, Message("user", continue_prompt(partial))], f"{purpose}:continue", node
            )
            extraction = join_continuation(partial, reply.text, reply.finish_reason)
        if extraction.failure is not None:
            raise CoderFailure(extraction.failure)
        return plan or "(no plan given)", extraction.code or ""

    # --- improve: diff edits with re-prompts, then a full rewrite ---
    def _improve(self, common: dict, parent: ParentView, context: Context, node: str) -> tuple[str, str]:
        stagnation = context.stagnation
        score = f"{parent.score:.6g}" if parent.score is not None else "—"
        variables = dict(
            common, parent=parent, parent_score=score, tier=stagnation_tier(stagnation), stagnation=stagnation
        )
        if not self.options.diff_mode:
            return self._full_script(render("improve", **variables, diff_mode=False), "improve", node)
        messages = self._messages(render("improve", **variables, diff_mode=True))
        code, attempts = parent.code, 0
        while True:
            reply = self._ask(messages, "improve:diff" if attempts == 0 else "improve:diff_retry", node)
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
        return self._full_script(render("improve", **variables, diff_mode=False), "improve:rewrite", node)

    # --- stepwise drafts ---
    def _stepwise(self, common: dict, tried: list[str], node: str) -> tuple[str, str]:
        plan_prompt = render("draft", **common, tried=tried) + (
            "\nFor now, reply with the plan only (no code): model, features, validation, in 3-6 sentences."
        )
        plan = self._ask(self._messages(plan_prompt), "draft:plan", node).text.strip()
        parts: dict[str, str] = {}
        for step in STEP_ORDER:
            prompt = render(
                "step",
                **common,
                plan=plan,
                previous=assemble_parts(parts) if parts else "",
                step=step,
                step_help=STEP_HELP[step],
            )
            _, code = self._full_script(prompt, f"draft:{step}", node)
            parts[step] = code
        return plan, assemble_parts(parts)


def _tried_line(item) -> str:
    what = item.meta.get("summary") or item.meta.get("recipe") or item.op
    outcome = f"{item.score:.5g}" if item.score is not None else item.status
    return f"{str(what)[:100]} -> {outcome}"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip(" #*-")
        if line:
            return line[:120]
    return ""


def _prose_before_edits(text: str) -> str:
    head = text.split("<<<<<<< SEARCH", 1)[0]
    return head.replace("```python", "").replace("```", "").strip()
