"""Brains turn an Action plus Context into a Proposal. Picked by name; heavy ones load lazily.

- ``recipes``: the offline recipe brain (no LLM) — the default when no model is configured;
- ``llm``: prompts + Coder over an LLM (``--model provider/name``);
- ``hybrid``: recipes draft, the LLM improves and repairs;
- ``scripted``: replays proposals (tests, ``--dry-run``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import ConfigError
from ..core.protocols import Brain
from ..llm.base import LLM

if TYPE_CHECKING:
    from .llm.brain import LLMBrainOptions

BRAINS = ("auto", "recipes", "llm", "hybrid", "scripted")
LLM_CODE_BRAINS = frozenset({"llm", "hybrid"})
"""Resolved brain names that run scripts an LLM wrote (which may be hostile); the recipe
and scripted brains run the harness's own templates. The sandbox never falls back to its
weak local layer for these unless asked (``mlguild.sandbox.get_sandbox``)."""


def resolve_brain_name(name: str, has_model: bool) -> str:
    """``auto`` means llm when a model is configured, else recipes. An unknown name is a
    ConfigError (with the closest name), raised before anything of a run is created."""
    if name not in BRAINS:
        close = difflib.get_close_matches(name, BRAINS, n=1)
        hint = f"did you mean --brain {close[0]}? " if close else ""
        raise ConfigError(f"unknown brain {name!r}", f"{hint}use --brain with one of: {', '.join(BRAINS)}")
    if name == "auto":
        return "llm" if has_model else "recipes"
    if name in ("llm", "hybrid") and not has_model:
        raise ConfigError(
            f"--brain {name} needs a model",
            "pass --model provider/name (e.g. --model ollama/qwen2.5-coder:14b), or use --brain recipes",
        )
    return name


def get_brain(
    name: str, seed: int = 0, llm_factory: Callable[[], LLM] | None = None, options: LLMBrainOptions | None = None
) -> Brain:
    """Build a brain by resolved name; ``llm_factory`` builds the LLM only when one is needed."""
    if name == "scripted":
        from .scripted import ScriptedBrain

        return ScriptedBrain()
    if name == "recipes":
        from .recipes import RecipeBrain

        return RecipeBrain(seed=seed)
    if name in ("llm", "hybrid"):
        from .llm.brain import LLMBrain

        if llm_factory is None:
            raise ConfigError(f"the {name} brain needs an LLM", "pass --model provider/name")
        llm_brain = LLMBrain(llm_factory(), options)
        if name == "llm":
            return llm_brain
        from .hybrid import HybridBrain
        from .recipes import RecipeBrain

        return HybridBrain(RecipeBrain(seed=seed), llm_brain)
    raise ConfigError(f"unknown brain {name!r}", f"use --brain with one of: {', '.join(BRAINS)}")
