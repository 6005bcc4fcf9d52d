"""Search: the graph of nodes and the policies that pick the next action."""

from __future__ import annotations

from ..config import SearchConfig
from ..errors import ConfigError
from ..protocols import Policy
from .graph import Node, SearchGraph
from .greedy import GreedyPolicy

POLICIES = {"greedy": GreedyPolicy}


def get_policy(cfg: SearchConfig) -> Policy:
    try:
        return POLICIES[cfg.policy](cfg)
    except KeyError:
        raise ConfigError(f"unknown search policy {cfg.policy!r}", f"use one of: {', '.join(POLICIES)}") from None


__all__ = ["GreedyPolicy", "Node", "SearchGraph", "get_policy"]
