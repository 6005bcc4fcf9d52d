"""The offline recipe brain: proven model families as readable script templates, no LLM."""

from .brain import RecipeBrain

__all__ = ["RecipeBrain"]
