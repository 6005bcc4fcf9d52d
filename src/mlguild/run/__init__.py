"""A run, from its folder to its last node: the run folder and its journal, the replayed state,
the session that holds a run's services, the loop and the one function that runs a node.

``mlguild.run.start`` and ``mlguild.run.resume`` (``mlguild.run.entry``) are the library's
entry point; they load lazily, so that importing a part of a run does not import them all.
"""

from __future__ import annotations

from typing import Any

_ENTRY = ("start", "resume", "Finished")


def __getattr__(name: str) -> Any:
    if name in _ENTRY:
        from . import entry

        return getattr(entry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
