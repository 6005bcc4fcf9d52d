"""Search: the graph of nodes and the policies that pick the next action."""

from __future__ import annotations

from ..config import BudgetConfig, SearchConfig
from ..core.errors import ConfigError
from ..core.graph import Node, SearchGraph
from ..core.protocols import Policy
from .greedy import GreedyPolicy
from .mcgs import MCGSPolicy

POLICIES: dict[str, type[GreedyPolicy] | type[MCGSPolicy]] = {"greedy": GreedyPolicy, "mcgs": MCGSPolicy}


def get_policy(cfg: SearchConfig, budget: BudgetConfig | None = None) -> Policy:
    """The policy ``cfg.policy`` names; ``budget`` (the run's) sets how fast mcgs moves from
    exploring to exploiting."""
    if cfg.policy not in POLICIES:
        raise ConfigError(f"unknown search policy {cfg.policy!r}", f"use one of: {', '.join(POLICIES)}")
    return POLICIES[cfg.policy](cfg, budget)


__all__ = ["GreedyPolicy", "MCGSPolicy", "Node", "SearchGraph", "get_policy"]
