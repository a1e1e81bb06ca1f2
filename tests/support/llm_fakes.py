"""One loopback HTTP server speaking just enough of each provider's protocol.

Every provider, service and the OAuth authorization server live under their own
path prefix, so a single Settings object can point all base URLs at it:
``/openai/v1``, ``/anthropic``, ``/google``, ``/openrouter/v1``, ``/exa``,
``/telegram``, ``/oauth`` (authorize + token) and ``/codex``. A key is accepted
when it contains ``good``; anything else gets the provider's style of 401.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.local_http import LocalHTTPServer


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeState:
    requests: list[Recorded] = field(default_factory=list)
    delay_s: float = 0.0  # sleep before answering (timeouts)
    chat_reply: str = "Hello from the fake model."
    # OAuth: authorization codes issued -> (code_challenge, redirect_uri)
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)
    oauth_error: str | None = None  # authorize redirects with ?error=
    token_lifetime_s: int = 3600
    issued_tokens: int = 0
    refresh_fails: bool = False
    # Non-zero: every model call (chat completions, messages, generateContent,
    # Codex responses) answers this status, so tests can count the tries.
    fail_status: int = 0

    def find(self, path_part: str) -> list[Recorded]:
        return [r for r in self.requests if path_part in r.path]


def _good(key: str | None) -> bool:
    return bool(key) and "good" in (key or "")


def _is_model_call(path: str) -> bool:
    return (
        path.endswith("/chat/completions")
        or path == "/anthropic/v1/messages"
        or path == "/codex/responses"
        or (path.startswith("/google/v1beta/models/") and path.lower().endswith("generatecontent"))
    )


class _Handler(BaseHTTPRequestHandler):
    state: FakeState
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _record(self) -> Recorded:
        parts = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        rec = Recorded(
            self.command,
            parts.path,
            {k: v[0] for k, v in parse_qs(parts.query).items()},
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        self.state.requests.append(rec)
        return rec

    def _send(
        self,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        rec = self._record()
        if self.state.delay_s:
            time.sleep(self.state.delay_s)
        p = rec.path
        if self.state.fail_status and _is_model_call(p):
            return self._fail(self.state.fail_status)
        if p == "/openai/v1/models" or p.endswith("/custom/v1/models"):
            return self._openai_models(rec)
        if p == "/openrouter/v1/models":
            return self._openrouter_models(rec)
        if p == "/openrouter/v1/key":
            return self._openrouter_key(rec)
        if p == "/codex/responses":
            return self._codex(rec)
        if p.endswith("/chat/completions"):
            return self._chat(rec)
        if p == "/anthropic/v1/messages":
            return self._anthropic_message(rec)
        if p.startswith("/google/v1beta/models/") and p.endswith(":generateContent"):
            return self._google_generate(rec)
        if p == "/anthropic/v1/models":
            return self._anthropic_models(rec)
        if p == "/google/v1beta/models":
            return self._google_models(rec)
        if p == "/exa/search":
            return self._exa(rec)
        if p.startswith("/telegram/bot"):
            return self._telegram(rec)
        if p == "/oauth/authorize":
            return self._authorize(rec)
        if p == "/oauth/token":
            return self._token(rec)
        self._send(404, {"error": {"message": f"no route {p}"}})

    # -- providers -------------------------------------------------------------

    def _fail(self, status: int) -> None:
        """An error in a shape every SDK parses (OpenAI, Anthropic and Google alike)."""
        err = {"code": status, "message": f"fake failure {status}", "type": "server_error"}
        self._send(status, {"type": "error", "error": err})

    def _openai_models(self, rec: Recorded) -> None:
        key = rec.headers.get("authorization", "").removeprefix("Bearer ")
        if not _good(key):
            err = {"message": "Incorrect API key provided.", "type": "invalid_request_error"}
            return self._send(401, {"error": err})
        data = [{"id": "gpt-4.1", "object": "model"}, {"id": "gpt-remote-only", "object": "model"}]
        self._send(200, {"object": "list", "data": data})

    def _openrouter_models(self, rec: Recorded) -> None:
        """Like the real OpenRouter: the model list is public, any key (or none) works."""
        data = [{"id": "anthropic/claude-sonnet-4.5"}, {"id": "or-remote-only/model"}]
        self._send(200, {"data": data})

    def _openrouter_key(self, rec: Recorded) -> None:
        """GET /key: information about the current key; 401 for a bad one."""
        key = rec.headers.get("authorization", "").removeprefix("Bearer ")
        if not _good(key):
            return self._send(401, {"error": {"message": "User not found.", "code": 401}})
        self._send(200, {"data": {"label": "sk-or-v1-good...", "usage": 0, "limit": None}})

    def _anthropic_models(self, rec: Recorded) -> None:
        if not rec.headers.get("anthropic-version"):
            return self._send(400, {"error": {"message": "anthropic-version header is required"}})
        if not _good(rec.headers.get("x-api-key")):
            err = {"type": "authentication_error", "message": "invalid x-api-key"}
            return self._send(401, {"type": "error", "error": err})
        self._send(200, {"data": [{"id": "claude-sonnet-4-5", "type": "model"}], "has_more": False})

    def _google_models(self, rec: Recorded) -> None:
        if not _good(rec.query.get("key")):
            err = {"code": 400, "message": "API key not valid. Please pass a valid API key."}
            return self._send(400, {"error": err})
        self._send(200, {"models": [{"name": "models/gemini-2.5-pro"}]})

    def _chat(self, rec: Recorded) -> None:
        body = json.loads(rec.body or b"{}")
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.state.chat_reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
        }
        self._send(200, reply)

    def _anthropic_message(self, rec: Recorded) -> None:
        key = rec.headers.get("x-api-key") or rec.headers.get("authorization", "")[7:]
        if not _good(key):
            err = {"type": "authentication_error", "message": "invalid x-api-key"}
            return self._send(401, {"type": "error", "error": err})
        body = json.loads(rec.body or b"{}")
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        }
        if not body.get("stream"):
            message["content"] = [{"type": "text", "text": self.state.chat_reply}]
            message["stop_reason"] = "end_turn"
            return self._send(200, message)
        text = self.state.chat_reply
        events = [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 6},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        data = "".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n" for name, ev in events)
        self._send(200, data.encode(), content_type="text/event-stream")

    def _google_generate(self, rec: Recorded) -> None:
        key = rec.headers.get("x-goog-api-key") or rec.query.get("key")
        if not _good(key):
            return self._send(400, {"error": {"code": 400, "message": "API key not valid."}})
        reply = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": self.state.chat_reply}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 5,
                "candidatesTokenCount": 6,
                "totalTokenCount": 11,
            },
            "modelVersion": "gemini-2.5-pro",
        }
        self._send(200, reply)

    def _codex(self, rec: Recorded) -> None:
        """The Responses API as a stream (the Codex backend only streams)."""
        if not _good(rec.headers.get("authorization")):
            return self._send(401, {"error": {"message": "invalid token"}})
        text = self.state.chat_reply
        item = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        base = {
            "id": "resp_1",
            "object": "response",
            "created_at": int(time.time()),
            "model": json.loads(rec.body or b"{}").get("model", "unknown"),
            "output": [],
            "status": "in_progress",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        usage = {
            "input_tokens": 5,
            "output_tokens": 6,
            "total_tokens": 11,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        done = {**base, "status": "completed", "output": [item], "usage": usage}
        events = [
            {"type": "response.created", "response": base},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]
        data = "".join(
            f"event: {ev['type']}\ndata: {json.dumps({**ev, 'sequence_number': i})}\n\n"
            for i, ev in enumerate(events)
        )
        self._send(200, data.encode(), content_type="text/event-stream")

    # -- services --------------------------------------------------------------

    def _exa(self, rec: Recorded) -> None:
        if not _good(rec.headers.get("x-api-key")):
            return self._send(401, {"error": "Invalid API key"})
        self._send(200, {"results": []})

    def _telegram(self, rec: Recorded) -> None:
        token = rec.path.removeprefix("/telegram/bot").removesuffix("/getMe")
        if not _good(token):
            return self._send(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        self._send(
            200, {"ok": True, "result": {"id": 1, "is_bot": True, "username": "famulus_bot"}}
        )

    # -- OAuth authorization server ---------------------------------------------

    def _authorize(self, rec: Recorded) -> None:
        q = rec.query
        redirect = q["redirect_uri"]
        if self.state.oauth_error:
            params = {"error": self.state.oauth_error, "state": q.get("state", "")}
        else:
            code = f"code-{len(self.state.codes)}"
            self.state.codes[code] = (q["code_challenge"], redirect)
            params = {"code": code, "state": q.get("state", "")}
        self.send_response(302)
        self.send_header("location", f"{redirect}?{urlencode(params)}")
        self.send_header("content-length", "0")
        self.end_headers()

    def _token(self, rec: Recorded) -> None:
        form = {k: v[0] for k, v in parse_qs(rec.body.decode()).items()}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            issued = self.state.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if issued is None or issued[0] != challenge or issued[1] != form.get("redirect_uri"):
                return self._send(400, {"error": "invalid_grant"})
        elif grant == "refresh_token":
            if self.state.refresh_fails or not form.get("refresh_token", "").startswith("refresh-"):
                return self._send(400, {"error": "invalid_grant"})
        else:
            return self._send(400, {"error": "unsupported_grant_type"})
        self.state.issued_tokens += 1
        n = self.state.issued_tokens
        claims = {"https://api.openai.com/auth": {"chatgpt_account_id": "acct-123"}}
        payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        self._send(
            200,
            {
                "access_token": f"access-good-{n}",
                "refresh_token": f"refresh-{n}",
                "id_token": f"e30.{payload}.sig",
                "expires_in": self.state.token_lifetime_s,
                "token_type": "Bearer",
            },
        )


@contextmanager
def fake_server() -> Iterator[tuple[str, FakeState]]:
    """Start the fake on 127.0.0.1:<free port>; yields (base URL, state)."""
    state = FakeState()
    handler = type("Handler", (_Handler,), {"state": state})
    with LocalHTTPServer(handler) as server:
        yield server.url, state


def settings_overrides(base: str) -> dict[str, Any]:
    """Settings fields pointing every provider, service and the OAuth server at the fake."""
    return {
        "openai_base_url": f"{base}/openai/v1",
        "anthropic_base_url": f"{base}/anthropic",
        "google_base_url": f"{base}/google",
        "openrouter_base_url": f"{base}/openrouter/v1",
        "codex_base_url": f"{base}/codex",
        "codex_auth_url": f"{base}/oauth/authorize",
        "codex_token_url": f"{base}/oauth/token",
        "codex_callback_port": 0,
        "exa_base_url": f"{base}/exa",
        "telegram_base_url": f"{base}/telegram",
    }
