"""A tiny recording HTTP server for webhook and Telegram Bot API tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.local_http import LocalHTTPServer

# handler(method, path, json_body) → (status, json_response) or
# (status, json_response, extra_headers)
Route = Callable[[str, str, Any], tuple[int, Any] | tuple[int, Any, dict[str, str]]]


@dataclass
class Recorder:
    url: str = ""
    requests: list[tuple[str, str, Any]] = field(default_factory=list)


@contextmanager
def recording_server(route: Route) -> Iterator[Recorder]:
    rec = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            rec.requests.append((self.command, self.path, body))
            status, reply, *more = route(self.command, self.path, body)
            data = json.dumps(reply).encode()
            self.send_response(status)
            for name, value in (more[0] if more else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _handle  # noqa: N815

    with LocalHTTPServer(Handler) as server:
        rec.url = server.url
        yield rec


def telegram_route(token: str) -> Route:
    """Speaks getMe, sendMessage and an empty getUpdates (famulus long-polls the
    bot while its token is connected) for one valid bot token."""

    def route(method: str, path: str, body: Any) -> tuple[int, Any]:
        if not path.startswith(f"/bot{token}/"):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        if path.endswith("/getMe"):
            return 200, {"ok": True, "result": {"id": 1, "is_bot": True, "username": "famulus_bot"}}
        if path.endswith("/getUpdates"):
            time.sleep(0.5)  # a long poll with nothing new, kept short
            return 200, {"ok": True, "result": []}
        if path.endswith("/sendMessage"):
            if body.get("chat_id") == "bad":
                return 400, {"ok": False, "description": "Bad Request: chat not found"}
            return 200, {"ok": True, "result": {"message_id": 7}}
        return 404, {"ok": False, "description": "Not Found"}

    return route
