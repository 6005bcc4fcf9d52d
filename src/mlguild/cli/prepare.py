"""What a run prepares before its first node: the brief and the idea pool."""

from __future__ import annotations

from ..pools import Pools, fill_run_ideas
from ..run.folder import RunDir
from ..task.brief import brief_path, ensure_brief
from .common import console, plain


def _brain_llm(brain, fake_llm: bool):
    """The brain's LLM (a hybrid's too), or None: none, or the dry run's stand-in."""
    llm = None
    for candidate in (brain, getattr(brain, "llm_brain", None)):
        llm = llm or getattr(candidate, "llm", None)
    return None if fake_llm else llm


def write_brief(run: RunDir, brain, fake_llm: bool) -> None:
    """brief.md before the first node: by the brain's LLM when it has one (not the dry run's
    stand-in), by heuristics otherwise; an existing one (the user's edit) is kept."""
    _, author = ensure_brief(run.path, run.spec, run.profile, run.description, _brain_llm(brain, fake_llm))
    console.print(
        f"brief {plain(brief_path(run.path))} ({'kept as found' if author == 'existing' else 'by ' + author})"
    )


def fill_ideas(run: RunDir, brain, fake_llm: bool) -> None:
    """The idea pool from the task's knowledge/ folder, before the first node (see mlguild.pools)."""
    pools = Pools.open(run.path)
    try:
        line = fill_run_ideas(run, pools, _brain_llm(brain, fake_llm))
    finally:
        pools.close()
    if line:
        console.print(plain(line))
