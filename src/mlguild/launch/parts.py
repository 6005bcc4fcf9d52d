"""The parts a run is made of, built from its configuration: the LLM its brain asks (or a
dry run's stand-in), the brain, and the sandbox with the line that says what it covers.
``launch.entry`` puts them together."""

from __future__ import annotations

import itertools
import os

from ..brains import LLM_CODE_BRAINS, get_brain
from ..brains.llm.brain import LLMBrainOptions
from ..brains.llm.cycle import stand_in_answer
from ..brains.scripted import PRIOR_SCRIPT
from ..config import Config
from ..core.errors import ConfigError
from ..core.protocols import Brain, Sandbox
from ..core.vocabulary import Event
from ..llm.base import LLM
from ..llm.reach import unreachable_local
from ..llm.router import build_router
from ..llm.scripted import ScriptedLLM
from ..rundir import events
from ..rundir.folder import RunDir
from ..sandbox import describe_layer, get_sandbox, is_strong


def llm_for(run: RunDir, brain_name: str, dry_run: bool) -> LLM | None:
    """The run's LLM when its brain needs one (its keys checked), a stand-in for a dry run
    with no model, or None."""
    cfg = run.config
    if brain_name not in LLM_CODE_BRAINS:
        return None
    if dry_run and not cfg.llm.models:
        numbers = itertools.count(1)
        # Each reply a distinct script (numbered): several workers never run one script twice.
        # The cycle's refine and report requests get DONE and no report (brains.llm.cycle).
        default = lambda messages: (
            stand_in_answer(messages[-1].content)
            or f"A prior predictor.\n```python\n# stand-in {next(numbers)}\n{PRIOR_SCRIPT.format(shrink=0.2)}```\n"
        )
        return ScriptedLLM(model="scripted/prior", default=default)
    records = [r for r in run.journal.records if r["type"] == Event.LLM_CALL]
    router = build_router(
        cfg.llm, run_dir=run.path, records=records, sink=lambda rec: events.llm_call(run.journal, rec)
    )
    for down in unreachable_local(cfg.llm.models):  # warned about before the run; the rest of the chain serves
        router.park(down.model, f"no server answers at {down.url} ({down.reason})")
    return router


def brain_for(cfg: Config, name: str, llm: LLM | None, review: bool = True) -> Brain:
    options = LLMBrainOptions.from_config(cfg, threads=cfg.sandbox.threads or os.cpu_count() or 1)
    options.review = options.review and review

    def llm_factory() -> LLM:
        assert llm is not None, "an LLM brain's model is built before the brain"
        return llm

    return get_brain(name, seed=cfg.brain.seed, llm_factory=llm_factory, options=options)


def brain_line(cfg: Config, name: str, dry_run: bool) -> str:
    chain = " → ".join(cfg.llm.models) or ("scripted fake LLM" if dry_run else "")
    return {
        "recipes": "recipes (offline recipes; no LLM configured)" if not cfg.llm.models else "recipes (offline)",
        "llm": f"llm ({chain})",
        "hybrid": f"hybrid (recipes draft; {chain} improves and repairs)",
        "scripted": "scripted (dry run)",
    }[name]


def sandbox_for(cfg: Config, brain_name: str) -> tuple[Sandbox, str, bool]:
    """The sandbox the config asks for, the one line that says what it is and what it does
    not cover, and whether that line is a warning ("auto" fell back to the weak local
    layer). Raises ConfigError when "auto" would run LLM-written scripts unconfined
    (get_sandbox), or --strict finds only the weak layer."""
    kind = cfg.sandbox.kind
    sandbox = get_sandbox(kind, llm_code=brain_name in LLM_CODE_BRAINS, gpu=cfg.sandbox.gpu)
    if cfg.sandbox.strict and not is_strong(sandbox):
        raise ConfigError(
            f"--strict: only the weaker sandbox layer is available ({describe_layer(sandbox)})",
            "apt-get install -y bubblewrap (as root), or run without --strict",
        )
    line = "sandbox " + describe_layer(sandbox).removeprefix("sandbox: ")
    return sandbox, line, kind == "auto" and not is_strong(sandbox)  # the harness's own scripts only
