"""Whether a local LLM server (Ollama, vLLM, llama.cpp, or any base_url on this machine)
answers at all, asked once before a run starts.

A closed local port is not a transient failure: the Router would retry it with backoff on
every call (about 26 s before the brief fell back to heuristics, then again for each node).
One TCP connect says it in milliseconds, so a run can name the address and the fix at once.
Remote endpoints are not probed: their failures are the Router's (retries, fallbacks).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..core.errors import ConfigError
from .registry import env_prefix, parse_model_string, resolve_base_url

LOCAL_HOSTS = frozenset({"localhost", "::1", "0.0.0.0", "ip6-localhost"})
CONNECT_TIMEOUT_S = 2.0  # a local server that is up accepts at once; refused is immediate


@dataclass(frozen=True)
class Unreachable:
    """A model of the chain whose local server refused (or did not accept) a connection."""

    model: str  # provider/name
    url: str  # the base_url tried
    reason: str  # "connection refused", "timed out", ...

    def fix(self) -> str:
        """The command that starts the server, or where its address is set."""
        provider = parse_model_string(self.model)[0]
        variable = env_prefix(provider) + "_BASE_URL"
        if provider == "ollama":
            return f"start it with `ollama serve` (and `ollama pull {self.model.split('/', 1)[1]}`), or set {variable}"
        return f"start the server at {self.url}, or check its address ({variable})"


def local_address(url: str) -> tuple[str, int] | None:
    """(host, port) of ``url`` when it is on this machine, else None."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host not in LOCAL_HOSTS and not host.startswith("127."):
        return None
    try:
        port = parts.port
    except ValueError:  # a malformed port: the SDK's error will name it
        return None
    return host, port or (443 if parts.scheme == "https" else 80)


def probe(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """One TCP connect to (host, port): None when it is accepted, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no answer in {timeout_s:g} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def unreachable_local(models: list[str]) -> list[Unreachable]:
    """The models of ``models`` whose base_url is on this machine and refuses a connection
    (one connect per distinct address)."""
    found: list[Unreachable] = []
    seen: dict[tuple[str, int], str | None] = {}
    for model in models:
        url = resolve_base_url(parse_model_string(model)[0])
        address = local_address(url)
        if address is None:
            continue
        if address not in seen:
            seen[address] = probe(*address)
        if seen[address] is not None:
            found.append(Unreachable(model, url, seen[address] or ""))
    return found


def local_server_warnings(models: list[str]) -> list[str]:
    """The warnings for the chain ``models`` (one per local server that refuses a
    connection); a ConfigError when no model of the chain is left: every LLM call would wait
    out its retries and fail, so a run would spend its budget on nodes that cannot run."""
    down = unreachable_local(models)
    if down and len(down) == len(models):
        first = down[0]
        raise ConfigError(
            f"no LLM server answers at {first.url} ({first.model}: {first.reason})",
            f"{first.fix()}; or run without an LLM: --brain recipes",
        )
    return [
        f"no LLM server answers at {each.url} ({each.model}: {each.reason}); the run goes on without it "
        f"(the rest of the --model chain serves); {each.fix()}"
        for each in down
    ]
