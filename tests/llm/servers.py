"""A real local HTTP server that speaks the three LLM wire formats, for tests.

One ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) answers, by path:
  POST /v1/chat/completions                     OpenAI (and every OpenAI-compatible server)
  POST /v1/messages                             Anthropic
  POST /v1beta/models/{model}:generateContent   Gemini
Each model has a script of behaviours played in order (then plain replies); every request
is recorded, so a test asserts what the real SDK client sent: model name, max tokens,
where the system prompt went. Nothing is mocked: the SDKs open sockets to this server.
"""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llm" / "errors"
_GEMINI_PATH = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")


@dataclass(frozen=True)
class Behaviour:
    """What the server does for one request: reply (possibly truncated), fail, stall or hang up."""

    kind: str  # reply | status | fixture | malformed | slow | reset | empty
    text: str = ""
    finish: str = "stop"  # stop | length (rendered in each wire's own spelling)
    tokens_in: int = 100
    tokens_out: int = 50
    cache_read: int = 0  # input tokens the "provider" says it read from its prompt cache
    cache_write: int = 0  # input tokens it says it wrote into that cache (Anthropic's wire only)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    fixture: str = ""  # a file under tests/fixtures/llm/errors, "{wire}" filled in
    delay_s: float = 0.0


def reply(
    text: str = "", tokens_in: int = 100, tokens_out: int = 50, cache_read: int = 0, cache_write: int = 0
) -> Behaviour:
    return Behaviour(
        "reply", text=text, tokens_in=tokens_in, tokens_out=tokens_out, cache_read=cache_read, cache_write=cache_write
    )


def truncated(text: str = "def train(:\n    x = ") -> Behaviour:
    return Behaviour("reply", text=text, finish="length")


def rate_limited(retry_after: float | None = 7) -> Behaviour:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Behaviour("fixture", fixture="{wire}_rate_limit", headers=headers)


def quota() -> Behaviour:
    return Behaviour("fixture", fixture="{wire}_quota")


def auth_error() -> Behaviour:
    return Behaviour("fixture", fixture="{wire}_auth")


def server_error(status: int = 500) -> Behaviour:
    return Behaviour("status", status=status)


def malformed() -> Behaviour:
    return Behaviour("malformed")


def empty() -> Behaviour:
    return Behaviour("empty")


def slow(delay_s: float = 5.0) -> Behaviour:
    return Behaviour("slow", delay_s=delay_s)


def reset() -> Behaviour:
    return Behaviour("reset")


@dataclass
class Seen:
    """One request as the server received it."""

    wire: str
    path: str
    model: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]


class LLMServer:
    """Start with ``with LLMServer() as srv:``; ``srv.url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self._scripts: dict[str, deque[Behaviour]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # a handler stalled on purpose must not hold up teardown
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, model: str, *behaviours: Behaviour) -> LLMServer:
        """Queue behaviours for requests naming ``model`` (the provider's name, no prefix)."""
        with self._lock:
            self._scripts[model].extend(behaviours)
        return self

    def requests_for(self, model: str) -> list[Seen]:
        return [r for r in self.requests if r.model == model]

    def _next(self, model: str) -> Behaviour:
        with self._lock:
            queue = self._scripts[model]
            return queue.popleft() if queue else reply(f"reply from {model}")

    def __enter__(self) -> LLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler_for(server: LLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
            gemini = _GEMINI_PATH.match(path)
            if path.endswith("/chat/completions"):
                wire, model = "openai", body.get("model", "")
            elif path.endswith("/messages"):
                wire, model = "anthropic", body.get("model", "")
            elif gemini:
                wire, model = "gemini", gemini.group(1)
            else:
                self._send(404, {"error": {"message": f"no route {path}"}})
                return
            with server._lock:
                server.requests.append(Seen(wire, path, model, {k.lower(): v for k, v in self.headers.items()}, body))
            self._play(server._next(model), wire, model)

        def _play(self, b: Behaviour, wire: str, model: str) -> None:
            if b.kind == "slow":
                # Wakes early at teardown, so a test never waits out the full delay.
                if server._stopping.wait(b.delay_s):
                    return
                b = reply(f"slow reply from {model}")
            if b.kind == "reset":
                self.close_connection = True  # hang up without a status line
                return
            if b.kind == "malformed":
                self._send_raw(200, b'{"id": "x", "choices": [ {"message": ', {})
            elif b.kind == "status":
                self._send(b.status, _error_body(wire, b.status), b.headers)
            elif b.kind == "fixture":
                fx = json.loads((FIXTURES / (b.fixture.format(wire=wire) + ".json")).read_text())
                # Lower-cased so a scripted Retry-After replaces the fixture's instead of doubling it.
                headers = {k.lower(): v for k, v in fx["headers"].items()}
                headers.update({k.lower(): v for k, v in b.headers.items()})
                self._send(fx["status"], fx["body"], headers)
            elif b.kind == "empty":
                self._send(200, _reply_body(wire, model, "", "stop", 10, 0))
            else:
                text = b.text or f"reply from {model}"
                self._send(
                    200,
                    _reply_body(wire, model, text, b.finish, b.tokens_in, b.tokens_out, b.cache_read, b.cache_write),
                )

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(body).encode(), headers or {})

        def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

    return Handler


def _reply_body(
    wire: str,
    model: str,
    text: str,
    finish: str,
    tokens_in: int,
    tokens_out: int,
    cache_read: int = 0,
    cache_write: int = 0,
) -> dict[str, Any]:
    """A reply in ``wire``'s format. ``cache_read`` goes where each provider reports prompt-cache
    reads; Anthropic counts them (and ``cache_write``, the tokens written into its cache) apart
    from ``input_tokens``, the others inside the prompt count."""
    if wire == "openai":
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
                "prompt_tokens_details": {"cached_tokens": cache_read},
            },
        }
    if wire == "anthropic":
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": "max_tokens" if finish == "length" else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": tokens_in - cache_read - cache_write,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
                "output_tokens": tokens_out,
            },
        }
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}] if text else []},
                "finishReason": "MAX_TOKENS" if finish == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": tokens_in,
            "candidatesTokenCount": tokens_out,
            "totalTokenCount": tokens_in + tokens_out,
            "cachedContentTokenCount": cache_read,
        },
        "modelVersion": model,
    }


def _error_body(wire: str, status: int) -> dict[str, Any]:
    message = f"simulated HTTP {status}"
    if wire == "openai":
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    if wire == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"code": status, "message": message, "status": "INTERNAL"}}
