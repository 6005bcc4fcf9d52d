"""Running one untrusted script: limits in, typed result out, nothing left running.

``get_sandbox("auto")`` picks the strongest layer available. Today that is the
always-on stdlib layer (``LocalSandbox``; its module docstring says exactly what it
covers and what it does not); a namespace layer (bubblewrap) joins the table later.
"""

from __future__ import annotations

from mlguild.errors import ConfigError
from mlguild.sandbox.base import ExecResult, ExecStatus, Limits
from mlguild.sandbox.local import LocalSandbox, safe_env

_SANDBOXES = {"local": LocalSandbox}


def get_sandbox(name: str = "auto") -> LocalSandbox:
    """Return a sandbox by name: "auto" (the strongest available) or "local".

    Raises ConfigError for an unknown name.
    """
    if name == "auto":
        name = "local"
    try:
        return _SANDBOXES[name]()
    except KeyError:
        known = ", ".join(["auto", *_SANDBOXES])
        raise ConfigError(
            f"unknown sandbox {name!r} (known: {known})",
            fix="set sandbox.name=auto (or one of the names above)",
        ) from None


__all__ = ["ExecResult", "ExecStatus", "Limits", "LocalSandbox", "get_sandbox", "safe_env"]
