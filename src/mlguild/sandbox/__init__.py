"""Running one untrusted script: limits in, typed result out, nothing left running.

Two layers share one contract (``run(argv, cwd, env, limits, stdout_path, stderr_path,
data_dir=None) -> ExecResult``) and one supervisor:

- ``local`` (local.py): always available, stdlib only; timeouts, the sweep, caps,
  rlimits, a clean environment. NOT a boundary against hostile code: no network or
  filesystem isolation, and usually no privilege drop (see its docstring).
- ``bwrap`` (bwrap.py): the script inside bubblewrap namespaces; no network, only the
  working directory writable, data read-only at /data, sealed data never mounted.

``get_sandbox("auto")`` picks bwrap when it is usable here (probed once per process;
``$MLGUILD_BWRAP`` names the binary), else local, but only for code the harness wrote
itself: for LLM-written code (``llm_code=True``) "auto" without a usable bwrap is a
ConfigError, so running such code unconfined is always an explicit choice ("local").
``is_strong`` and ``describe_layer`` tell the caller what it got, so it can print it and
refuse to start in a strict mode.
"""

from __future__ import annotations

from mlguild.core.errors import ConfigError
from mlguild.core.execution import ExecResult, ExecStatus, Limits
from mlguild.sandbox.bwrap import BwrapSandbox, probe
from mlguild.sandbox.local import LocalSandbox, safe_env
from mlguild.sandbox.plan import drop_target
from mlguild.sandbox.runner import SupervisedSandbox

_SANDBOXES = {"local": LocalSandbox, "bwrap": BwrapSandbox}


def get_sandbox(name: str = "auto", *, llm_code: bool = False, **options) -> SupervisedSandbox:
    """Return a sandbox by name: "auto" (bwrap if usable here, else local), "local" or
    "bwrap". ``options`` go to the layer's constructor (e.g. ``gpu=False`` for bwrap;
    those a layer does not take are ignored, so "auto" accepts bwrap's).

    ``llm_code``: the scripts are written by an LLM (the llm and hybrid brains), not by
    the harness's own templates. Then "auto" never falls back to the local layer, which
    is no boundary against hostile code (local.py): asking for "local" is the way to
    accept it.

    Raises ConfigError for an unknown name, for "bwrap" when bubblewrap is unusable, and
    for "auto" with ``llm_code`` when bubblewrap is unusable.
    """
    if name == "auto" and llm_code and not probe()[0]:
        why = probe()[1].split(" (fix:")[0]
        raise ConfigError(
            f"the namespace sandbox is not usable here ({why}), and LLM-written scripts run "
            f"on the weaker local layer only when asked",
            fix="apt-get install -y bubblewrap (as root), or accept the weaker layer with "
            "--sandbox local (sandbox.kind=local)",
        )
    if name == "auto":
        name = "bwrap" if probe()[0] else "local"
    elif name == "bwrap" and not probe()[0]:
        raise ConfigError(
            f"sandbox 'bwrap' is not usable here: {probe()[1]}",
            fix="install bubblewrap, or set sandbox.kind=auto (or local)",
        )
    try:
        cls = _SANDBOXES[name]
    except KeyError:
        known = ", ".join(["auto", *_SANDBOXES])
        raise ConfigError(
            f"unknown sandbox {name!r} (known: {known})",
            fix="set sandbox.kind=auto (or one of the names above)",
        ) from None
    if cls is LocalSandbox:
        options = {k: v for k, v in options.items() if k in ("slack_s", "prestart")}
    return cls(**options)


def is_strong(sandbox) -> bool:
    """True when the layer isolates filesystem, network and processes (the namespace
    layer); False for the always-on layer, which only contains accidents."""
    return bool(getattr(sandbox, "strong", False))


def describe_layer(sandbox, limits: Limits | None = None) -> str:
    """One line for the user: which layer runs scripts, and what it lacks.

    ``limits`` (default ``Limits()``) decides which uid drop is described. For the
    namespace layer this runs its uid probe once (tens of milliseconds).
    """
    limits = limits or Limits()
    target = drop_target(limits)
    if isinstance(sandbox, BwrapSandbox):
        if target is None:
            who = "as the agent's uid in a user namespace"
        else:
            why = sandbox.drop_problem(*target)
            who = f"as uid {target[0]}" if not why else f"as root without capabilities ({why})"
        gpu = ", ".join(sandbox.devices()) or "none"
        return (
            "sandbox: bwrap (namespace layer): no network, own PID namespace, only the "
            f"node directory writable, data read-only at /data, sealed data never "
            f"mounted; scripts run {who}; GPU devices: {gpu}"
        )
    why_not = probe()[1]
    if target is None:
        who = "as the agent's uid"
    else:
        why = sandbox.drop_problem(*target)
        who = f"as uid {target[0]}" if not why else f"AS ROOT (uid {target[0]} {why})"
    bwrap = f"namespace layer unavailable: {why_not}" if why_not else "namespace layer not selected"
    return (
        f"sandbox: local (always-on layer) - WEAK: no network or filesystem isolation "
        f"(a script can read sealed labels by path, open connections, and signal the "
        f"agent when it shares its uid); scripts run {who}; {bwrap}"
    )


__all__ = [
    "BwrapSandbox",
    "ExecResult",
    "ExecStatus",
    "Limits",
    "LocalSandbox",
    "describe_layer",
    "get_sandbox",
    "is_strong",
    "safe_env",
]
