"""A content-addressed reply cache, so a resumed run never pays twice for the same prompt.

Key: sha256 of (model, messages, max_tokens, temperature, node) as canonical JSON. Value: the
Completion, one JSON file per key at ``<dir>/<key[:2]>/<key>.json``. The node that asked is
part of the key: the cache serves the resume of that node, never another node that happens
to send the same prompt (it would get the same reply, and run the same script again).

Files rather than SQLite because the cache lives in the run directory, which ARCHITECTURE.md
promises is plain files a human can read (``cat`` shows the prompt and the reply), and
because several worker processes may share it: a write is temp file + fsync + ``os.replace``,
atomic on POSIX, so a reader sees a whole entry or none, with no lock and no journal mode
to get wrong on a network filesystem. Two workers filling one key race harmlessly: both
write a valid reply and the last rename wins.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..util.fs import atomic_write
from .base import Completion, Message

FORMAT = 1


def cache_key(model: str, messages: list[Message], max_tokens: int, temperature: float, node: str = "") -> str:
    """The hex sha256 naming one request of one node ("" for a request of the run, such as
    the task summary). The purpose label and timeouts are not part of it."""
    payload = {
        "model": model,
        "messages": [[m.role, m.content] for m in messages],
        "max_tokens": int(max_tokens),
        "temperature": float(temperature),
        "node": node,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ReplyCache:
    """Replies stored under ``directory`` (created on first write)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(
        self, model: str, messages: list[Message], max_tokens: int, temperature: float, node: str = ""
    ) -> Completion | None:
        """The stored reply marked ``cached=True`` and free (``cost_usd=0``), or None.

        An unreadable entry (hand-edited, or from another format) is a miss, never an error:
        the worst outcome of a bad cache file must be paying for the call again.
        """
        path = self._path(cache_key(model, messages, max_tokens, temperature, node))
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            if entry.get("format") != FORMAT:
                return None
            completion = Completion.from_dict(entry["completion"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return replace(completion, cached=True, cost_usd=0.0, latency_s=0.0)

    def put(
        self, messages: list[Message], max_tokens: int, temperature: float, completion: Completion, node: str = ""
    ) -> Path:
        """Store ``completion`` under the key of (its model, the request, the node). Atomic;
        returns the path."""
        key = cache_key(completion.model, messages, max_tokens, temperature, node)
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry: dict[str, Any] = {
            "format": FORMAT,
            "key": key,
            "request": {
                "model": completion.model,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "node": node,
                "messages": [{"role": m.role, "content": m.content} for m in messages],
            },
            "completion": replace(completion, cached=False).to_dict(),
        }
        atomic_write(path, json.dumps(entry, ensure_ascii=False, indent=1))
        return path

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json")) if self.directory.exists() else 0
