"""Typed, layered configuration: packaged defaults < user YAML < ``a.b=value`` overrides.

The resolved configuration is saved into every run as ``config.yaml`` so a run can be
understood (and resumed) without the command line that started it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from ..core.errors import ConfigError
from ..core.suggest import closest
from .base import _Section
from .isolation import FirewallConfig as FirewallConfig  # re-exported, as every section
from .isolation import SandboxConfig
from .llm import LLMConfig
from .search import MCGSConfig as MCGSConfig  # re-exported: every section is importable from here
from .search import SearchConfig


class BudgetConfig(_Section):
    time_s: float | None = Field(None, gt=0, description="Wall-clock budget of the whole run (None = unlimited).")
    iterations: int | None = Field(None, gt=0, description="Maximum number of nodes (None = unlimited).")
    script_share: float = Field(
        0.4,
        gt=0,
        le=1,
        description="Most of the run's time budget one script may use, so that a short run still makes several attempts.",
    )
    default_time_s: float = Field(
        600.0, gt=0, description="The time budget of a run started with neither --time nor --iterations."
    )


class BrainConfig(_Section):
    name: str = Field(
        "auto", description="Brain: auto (llm if a model is set, else recipes), recipes, llm, hybrid, scripted."
    )
    seed: int = Field(0, description="Seed of the brain's random choices.")
    diff_mode: bool = Field(True, description="LLM improves as SEARCH/REPLACE edits (falls back to a rewrite).")
    stepwise: bool = Field(False, description="LLM drafts written part by part: data, features, model, train, predict.")
    history_length: int = Field(
        60, ge=1, description="Earlier nodes a brain sees, summarised (the context never grows with the graph)."
    )
    eda: bool = Field(
        True,
        description="With an LLM brain, the first node is an exploratory script whose findings go into brief.md (not counted in budget.iterations).",
    )
    eda_timeout_s: float = Field(180, gt=0, description="Time limit of the exploratory script, in seconds.")
    cycle: Literal["off", "community"] = Field(
        "off",
        description="community (--cycle community, LLM brain): each draft, improve or evolve selects ideas from the idea pool, drafts an approach, implements it in an isolated context with a write-run-observe-refine loop inside the node (its final script scored once), and the model writes its report, whose next directions become ideas.",
    )
    cycle_steps: int = Field(
        20,
        ge=1,
        le=50,
        description="Most runs of a script inside one node of the community cycle (the first included): repairs of a failed run and refinements of a working one.",
    )
    review: bool = Field(
        True,
        description="With an LLM brain (llm, hybrid), the LLM reviews each script it wrote before it runs (leaky validation, contract breaks, wasted time); a serious finding sends it back for one revision (--no-review: off).",
    )


class FinalConfig(_Section):
    grade_test: bool = Field(True, description="Grade the final submission once on sealed test answers at the end.")
    refit: bool = Field(
        True,
        description="Rerun the best node's script on all labelled rows (train + holdout) for the final submission; the search stops early enough to leave it time.",
    )
    tie_share: float = Field(
        0.9,
        ge=0,
        le=1,
        description="The best node is final only if it beats the best blend on this share of bootstrap resamples of the holdout; otherwise the blend is (a tie on a noisy holdout favours the blend).",
    )
    refit_min_agreement: float = Field(
        0.8,
        ge=0,
        le=1,
        description="A refit is used only if its test predictions agree this much with the best node's (rank correlation, or share of equal labels); ranked lists and time-ordered tasks judge a refit by its holdout metric instead.",
    )
    max_refit_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Most of the run's time budget the search keeps back for the final refit (the reserve is what this run's candidates measured); a refit that needs more is not waited for, and the final stage refits the best node whose refit fits the time left.",
    )
    reference_models: bool = Field(
        True,
        description="The baseline ladder's reference models (a regularised linear model, a LightGBM default) run as the first search nodes, counted in the budget; they are skipped when the iteration budget is under 6 nodes.",
    )
    reference_time_share: float = Field(
        0.1,
        gt=0,
        le=1,
        description="Most of the run's time budget each reference model of the baseline ladder may take.",
    )
    reference_score: float | None = Field(
        None,
        description="The ladder's ceiling (--reference-score): a score known to be reachable, e.g. the winning leaderboard score; None: the metric's best value.",
    )


class ScorerConfig(_Section):
    max_submission_mb: int = Field(
        512,
        gt=0,
        description="Largest submission file (holdout or test predictions) the scorer reads, in MiB; a larger one is refused unread.",
    )
    leaky_cv_z: float = Field(
        4.0,
        ge=0,
        description="A node whose out-of-fold score beats its holdout score by more than this many standard errors is flagged leaky_cv and kept out of blends (0: off).",
    )

    @property
    def max_submission_bytes(self) -> int:
        return self.max_submission_mb * 1024**2


class MemoryConfig(_Section):
    """Experience records and their retrieval (mlguild.memory)."""

    enabled: bool = Field(
        True,
        description="Use the store shared by every run (the run's own memory is always on); --no-memory sets false.",
    )
    path: str | None = Field(
        None, description="The shared store, an SQLite file (None = memory.sqlite in $MLGUILD_HOME, ~/.mlguild)."
    )
    recall: int = Field(
        4, ge=0, description="Records of this run shown before a proposal: this many successes and as many failures."
    )
    similar: int = Field(4, ge=0, description="Records of other runs on similar tasks shown before a proposal.")
    max_distance: float = Field(
        2.0,
        ge=0,
        description="How unlike this task another may be for its records to count (task type 3, metric 1, modality 1, sizes by orders of magnitude).",
    )
    embeddings: bool = Field(
        False,
        description="Also rank records by sentence-embedding similarity, fused with BM25 (needs the [embeddings] extra).",
    )


class KaggleConfig(_Section):
    submit: Literal["never", "best", "each"] = Field(
        "never",
        description="Submit to Kaggle (a task made from a Kaggle competition): never; best (the final submission, once, at the end); each (every node when it becomes the best).",
    )
    daily_limit: int = Field(
        5, ge=0, description="Submissions a run makes in any 24 hours at most (the competition's own limit when lower)."
    )
    poll_s: float = Field(
        120, ge=0, description="How long the end of a run waits for Kaggle to score its submissions (public scores)."
    )


class PoolsConfig(_Section):
    """The run's report and idea pools (mlguild.pools)."""

    reports_shown: int = Field(
        3, ge=0, description="Reports of other nodes of the run a proposal's prompt shows, the most relevant first."
    )
    ideas_shown: int = Field(
        5,
        ge=0,
        description="Ideas from the idea pool offered to each draft, improve or evolve (chosen for that node), the best first.",
    )
    ideas_from_knowledge: bool = Field(
        True, description="Fill the idea pool from the task's knowledge/ folder when the run starts."
    )
    llm_extraction: bool = Field(
        True, description="An LLM, when the run has one, reads the knowledge for ideas (else rules do)."
    )
    near_copy_overlap: float = Field(
        0.5,
        gt=0,
        le=1,
        description="A node whose script has this share of its 8-token runs in one knowledge item's code is labelled a near-copy of it.",
    )


class Config(_Section):
    """The whole resolved configuration of a run."""

    firewall: FirewallConfig = FirewallConfig()
    sandbox: SandboxConfig = SandboxConfig()
    search: SearchConfig = SearchConfig()
    budget: BudgetConfig = BudgetConfig()
    brain: BrainConfig = BrainConfig()
    final: FinalConfig = FinalConfig()
    scorer: ScorerConfig = ScorerConfig()
    memory: MemoryConfig = MemoryConfig()
    pools: PoolsConfig = PoolsConfig()
    kaggle: KaggleConfig = KaggleConfig()
    llm: LLMConfig = LLMConfig()


def mlguild_home() -> Path:
    """The user's mlguild folder: $MLGUILD_HOME, else ~/.mlguild (tasks, the memory store)."""
    return Path(os.environ.get("MLGUILD_HOME", Path.home() / ".mlguild")).expanduser()


def _parse_value(text: str) -> Any:
    # YAML scalars give the natural types: 3 -> int, 0.5 -> float, true -> bool, null -> None.
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"cannot set {dotted}: {key} is not a section", "use a.b=value with a known section")
    node[keys[-1]] = value


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(
    yaml_path: str | Path | None = None, overrides: list[str] | None = None, base: dict | None = None
) -> Config:
    """Resolve the configuration. ``overrides`` are ``section.field=value`` strings."""
    tree: dict[str, Any] = dict(base or {})
    if yaml_path:
        path = Path(yaml_path)
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}", f"fix or remove {path}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"config {path} must be a mapping of sections", "see `mlguild config`")
        tree = _merge(tree, loaded)
    for item in overrides or []:
        match = re.fullmatch(r"([A-Za-z_][\w.]*)=(.*)", item.strip())
        if not match:
            raise ConfigError(
                f"override {item!r} is not of the form section.field=value", "e.g. --set search.num_drafts=4"
            )
        _set_dotted(tree, match.group(1), _parse_value(match.group(2)))
    try:
        return Config.model_validate(tree)
    except ValidationError as exc:
        raise _config_error(exc) from exc


def _config_error(exc: ValidationError) -> ConfigError:
    """pydantic's complaint as a user reads it: an unknown name gets its did-you-mean (not
    "Extra inputs are not permitted"), a bad value its setting's description."""
    names = [name for name, _, _ in settings()]
    known = {name: description for name, _, description in settings()}
    problems, fixes = [], []
    for error in exc.errors():
        dotted = ".".join(map(str, error["loc"]))
        if error["type"] == "extra_forbidden":
            section = dotted.rpartition(".")[0]
            candidates = [n for n in names if n.startswith(f"{section}.")] if section else names
            # a whole section's name is offered for an unknown section (bogus.x -> search)
            candidates += sorted({n.split(".")[0] for n in names}) if not section else []
            guess = closest(dotted, candidates)
            problems.append(f"unknown setting {dotted}" + (f"; did you mean {guess}?" if guess else ""))
            where = section or (guess.split(".")[0] if guess else "")
            fixes.append(f"see the settings with `mlguild config {where}`" if where else "see `mlguild config`")
        else:
            problems.append(f"{dotted}: {error['msg']}" + (f" ({known[dotted]})" if dotted in known else ""))
            fixes.append(f"see `mlguild config {dotted}`" if dotted in known else "see `mlguild config`")
    return ConfigError(f"invalid configuration: {'; '.join(problems)}", "; ".join(dict.fromkeys(fixes)))


def save_config(config: Config, path: Path) -> None:
    path.write_text(yaml.safe_dump(config.model_dump(), sort_keys=False))


# The shortest --time a run can use: creating it, one node and the final refit take this much
# on a small data set; below it a run ends with no node at all.
MIN_RUN_S = 30.0


def parse_duration(text: str, flag: str = "--time", minimum_s: float = 0.0) -> float:
    """'90s', '5m', '1.5h' or '2d' -> seconds, for the option ``flag``. A bare number is refused:
    `--time 5` meant as five minutes would run five seconds and end with nothing."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text or "")
    if not match:
        raise ConfigError(
            f"cannot read {flag} {text!r} as a duration", f"use a number and a unit, e.g. {flag} 90s, 5m, 2h"
        )
    number, unit = match.groups()
    if not unit:
        raise ConfigError(
            f"{flag} {number} has no unit: seconds or minutes?",
            f"add the unit, e.g. {flag} {number}m for {number} minutes ({flag} {number}s for seconds)",
        )
    seconds = float(number) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if seconds <= 0 or seconds < minimum_s:
        least = f"at least {minimum_s:g}s" if minimum_s else "more than 0s"
        raise ConfigError(f"{flag} {text.strip()} is too short: it must be {least}", f"e.g. {flag} 5m")
    return seconds


def settings(model: type[BaseModel] = Config, prefix: str = "") -> list[tuple[str, Any, str]]:
    """Every setting as (dotted name, default, description), sections in order."""
    rows: list[tuple[str, Any, str]] = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            rows += settings(kind, f"{prefix}{name}.")
        else:
            rows.append((f"{prefix}{name}", info.get_default(call_default_factory=True), info.description or ""))
    return rows


def matching_settings(query: str | None) -> list[tuple[str, Any, str]]:
    """The settings ``mlguild config QUERY`` lists: a section's or a setting's own name first
    (``search`` is not every name with "search" in it); else every name containing ``query``."""
    rows = settings()
    if query is None:
        return rows
    exact = [r for r in rows if r[0] == query or r[0].startswith(f"{query}.")]
    return exact or [r for r in rows if query.casefold() in r[0].casefold()]
