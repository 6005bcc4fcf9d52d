"""The composition root: ``start`` and ``resume`` build a run's parts (the LLM, brain and
sandbox, ``parts``), drive its search (``mlguild.run``), its final stage (``mlguild.final``)
and its report (``mlguild.view``). Nothing below imports this package.

The names load lazily, so that ``import mlguild.launch.parts`` does not import the whole run.
"""

from __future__ import annotations

from typing import Any

_ENTRY = ("start", "resume", "Finished")


def __getattr__(name: str) -> Any:
    if name in _ENTRY:
        from . import entry

        return getattr(entry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
