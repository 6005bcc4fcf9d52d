"""mlguild: an autonomous machine-learning engineer.

The core concepts are small Protocols in ``mlguild.core.protocols``; implementations are picked
by name from small tables, and heavy providers are imported lazily so that
``import mlguild`` stays fast.
"""

from typing import Any

__version__ = "0.1.0"

_API = ("fit", "open", "Result")


def __getattr__(name: str) -> Any:
    """``mlguild.fit``, ``mlguild.open`` and ``mlguild.Result`` (``mlguild.api``), imported on
    first use so that ``import mlguild`` stays fast."""
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
