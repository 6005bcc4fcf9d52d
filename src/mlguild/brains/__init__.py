"""Brains turn an Action plus Context into a Proposal. Picked by name; heavy ones load lazily."""

from __future__ import annotations

from ..errors import ConfigError

BRAINS = ("recipes", "scripted")


def get_brain(name: str, seed: int = 0):
    if name == "recipes":
        from .recipes import RecipeBrain

        return RecipeBrain(seed=seed)
    if name == "scripted":
        from .scripted import ScriptedBrain

        return ScriptedBrain()
    raise ConfigError(f"unknown brain {name!r}", f"use --brain with one of: {', '.join(BRAINS)}")
