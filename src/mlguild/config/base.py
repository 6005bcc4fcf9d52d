"""The base of every configuration section (mlguild.config): unknown keys are refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
