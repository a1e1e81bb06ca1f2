"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

Tests queue ``Turn``s (text, tool calls, an HTTP error, delays) and point a
custom model at ``server.base_url``; each POST /v1/chat/completions plays the
next turn, streamed (SSE chunks) or not, as the client asks. With the queue
empty, ``responder`` (a callable taking the request JSON) or ``default`` plays.
Every request body is kept in ``requests``. GET /v1/models lists ``models``.

``ScriptedServer`` is protocol-neutral; ``scripted_anthropic`` reuses it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.local_http import LocalHTTPServer


@dataclass
class Turn:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between streamed chunks
    status: int = 200  # >= 400: answer with an error body instead
    error: str = ""
    error_code: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 12
    completion_tokens: int = 0  # 0: one per word

    def words(self) -> list[str]:
        parts = self.text.split(" ")
        return (
            [w + (" " if i < len(parts) - 1 else "") for i, w in enumerate(parts)]
            if self.text
            else []
        )

    def usage_out(self) -> int:
        return self.completion_tokens or max(1, len(self.words()))


class ScriptedServer:
    """Threaded loopback HTTP server; subclasses render turns in a protocol."""

    def __init__(self, models: list[str] | None = None) -> None:
        self.models = models or ["scripted-model"]
        self.script: deque[Turn] = deque()
        self.default = Turn(text="ok")
        self.responder: Callable[[dict[str, Any]], Turn] | None = None
        self.requests: list[dict[str, Any]] = []
        self.api_keys: set[str] | None = None  # None: any key
        self.last_token_at = 0.0  # monotonic time the last chunk of a response was sent
        self._lock = threading.Lock()
        self._server = LocalHTTPServer(self._handler_class())

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def push(self, *turns: Turn) -> None:
        with self._lock:
            self.script.extend(turns)

    def reset(self) -> None:
        with self._lock:
            self.script.clear()
            self.requests.clear()
            self.responder = None

    def next_turn(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            self.requests.append(body)
            if self.script:
                return self.script.popleft()
        return self.responder(body) if self.responder else self.default

    # -- protocol hooks --------------------------------------------------------

    def key_ok(self, headers: Any) -> bool:
        raise NotImplementedError

    def models_body(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": m, "object": "model", "owned_by": "test"} for m in self.models],
        }

    def error_body(self, turn: Turn) -> dict[str, Any]:
        raise NotImplementedError

    def complete(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, turn: Turn, body: dict[str, Any]) -> Iterator[str]:
        raise NotImplementedError

    def completion_path(self, path: str) -> bool:
        raise NotImplementedError

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if not server.key_ok(self.headers):
                    self._json(
                        401,
                        server.error_body(
                            Turn(status=401, error="invalid api key", error_code="invalid_api_key")
                        ),
                    )
                elif self.path.split("?")[0].endswith("/models"):
                    self._json(200, server.models_body())
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not server.completion_path(self.path.split("?")[0]):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                if not server.key_ok(self.headers):
                    self._json(
                        401,
                        server.error_body(
                            Turn(status=401, error="invalid api key", error_code="invalid_api_key")
                        ),
                    )
                    return
                turn = server.next_turn(body)
                if turn.delay:
                    time.sleep(turn.delay)
                if turn.status >= 400:
                    self._json(turn.status, server.error_body(turn), turn.headers)
                elif body.get("stream"):
                    self._stream(turn, body)
                else:
                    self._json(200, server.complete(turn, body))
                    server.last_token_at = time.monotonic()

            def _stream(self, turn: Turn, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for frame in server.stream(turn, body):
                        self.wfile.write(frame.encode())
                        self.wfile.flush()
                        server.last_token_at = time.monotonic()
                        if turn.chunk_delay:
                            time.sleep(turn.chunk_delay)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client cancelled

        return Handler


class ScriptedOpenAI(ScriptedServer):
    """Speaks /v1/chat/completions (stream and non-stream) and /v1/models."""

    def key_ok(self, headers: Any) -> bool:
        if self.api_keys is None:
            return True
        auth = headers.get("Authorization", "")
        return auth.removeprefix("Bearer ").strip() in self.api_keys

    def completion_path(self, path: str) -> bool:
        return path.endswith("/chat/completions")

    def error_body(self, turn: Turn) -> dict[str, Any]:
        return {
            "error": {
                "message": turn.error or "error",
                "type": "invalid_request_error",
                "code": turn.error_code or None,
            }
        }

    def _tool_calls(self, turn: Turn) -> list[dict[str, Any]]:
        return [
            {
                "id": f"call_{i}_{int(time.monotonic() * 1000)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(turn.tool_calls)
        ]

    def _usage(self, turn: Turn) -> dict[str, int]:
        out = turn.usage_out()
        return {
            "prompt_tokens": turn.prompt_tokens,
            "completion_tokens": out,
            "total_tokens": turn.prompt_tokens + out,
        }

    def complete(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = self._tool_calls(turn)
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.models[0]),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                }
            ],
            "usage": self._usage(turn),
        }

    def stream(self, turn: Turn, body: dict[str, Any]) -> Iterator[str]:
        model = body.get("model", self.models[0])

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return f"data: {json.dumps(payload)}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        for word in turn.words():
            yield chunk({"content": word})
        for i, call in enumerate(self._tool_calls(turn)):
            yield chunk({"tool_calls": [{"index": i, **call}]})
        yield chunk({}, "tool_calls" if turn.tool_calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": self._usage(turn),
            }
            yield f"data: {json.dumps(usage)}\n\n"
        yield "data: [DONE]\n\n"
