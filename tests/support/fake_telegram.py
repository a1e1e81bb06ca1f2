"""A fake Telegram Bot API on 127.0.0.1, for the two-way channel's tests.

Speaks ``getMe``, ``getUpdates`` (long-polling: a call waits up to its
``timeout`` for an update), ``sendMessage``, ``editMessageText``,
``answerCallbackQuery``, ``sendChatAction``, ``getFile`` and the file download
``GET /file/bot<token>/<path>``. Like Telegram it checks what it is sent:
HTML must be well formed and use only Telegram's tags, a message's visible
text is at most 4096 characters, an edit that changes nothing is a 400 and
``callback_data`` is at most 64 bytes.

Tests inject updates (``message``, ``photo``, ``press``) and read what the bot
did (``calls``, ``chat_messages``). Unlike Telegram, the fake never forgets an
update: ``getUpdates`` returns every update from ``offset`` on, so a client
that lost its offset would see (and answer) them all again. ``revoke()`` makes
every call answer 401, as for a deleted bot.
"""

from __future__ import annotations

import html
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.support.local_http import LocalHTTPServer

TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "a",
        "blockquote", "tg-spoiler", "span"}  # fmt: skip
LIMIT = 4096


@dataclass
class Shown:
    """A message the bot sent, as it reads now (after every edit)."""

    chat_id: int
    message_id: int
    text: str
    parse_mode: str | None
    buttons: list[list[dict[str, Any]]] | None
    edits: int = 0


class _Checker(HTMLParser):
    """Telegram's HTML rules: known tags, properly nested; collects the visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.visible: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.error = self.error or f'Unsupported start tag "{tag}"'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.error = self.error or f'Unmatched end tag "{tag}"'
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.visible.append(data)


def visible_text(text: str, parse_mode: str | None) -> tuple[str, str | None]:
    """The text as the reader sees it, and the parse error (None if fine)."""
    if parse_mode != "HTML":
        return text, None
    checker = _Checker()
    checker.feed(text)
    checker.close()
    error = checker.error or (f'Unclosed tag "{checker.stack[-1]}"' if checker.stack else None)
    return html.unescape("".join(checker.visible)), error


@dataclass
class FakeTelegram:
    token: str
    username: str = "famulus_test_bot"
    bot_id: int = 4242
    updates: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    shown: dict[tuple[int, int], Shown] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    revoked: bool = False
    failing_polls: int = 0  # this many next getUpdates answer 502 (passing trouble)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self._next_update = 100
        self._next_message = 1000
        self._server = LocalHTTPServer(self._handler())

    # -- lifecycle -------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> FakeTelegram:
        self._server.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._cond.notify_all()
        self._server.stop()

    def revoke(self, revoked: bool = True) -> None:
        with self._cond:
            self.revoked = revoked
            self._cond.notify_all()

    # -- injecting updates -----------------------------------------------------

    def _push(self, kind: str, payload: dict[str, Any]) -> int:
        with self._cond:
            update_id = self._next_update
            self._next_update += 1
            self.updates.append({"update_id": update_id, kind: payload})
            self._cond.notify_all()
            return update_id

    def _message(self, chat_id: int, name: str) -> dict[str, Any]:
        with self._cond:
            self._next_message += 1
            message_id = self._next_message
        chat = {"id": chat_id, "type": "private", "first_name": name}
        return {"message_id": message_id, "date": int(time.time()), "chat": chat,
                "from": {"id": chat_id, "is_bot": False, "first_name": name}}  # fmt: skip

    def message(self, chat_id: int, text: str, name: str = "Ada") -> int:
        return self._push("message", {**self._message(chat_id, name), "text": text})

    def photo(self, chat_id: int, data: bytes, caption: str = "", name: str = "Ada") -> int:
        path = f"photos/file_{len(self.files)}.jpg"
        self.files["big"] = (path, data)
        self.files["small"] = ("photos/small.jpg", b"small")
        sizes = [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
            {"file_id": "big", "file_unique_id": "b", "width": 1280, "height": 960},
        ]
        body = {**self._message(chat_id, name), "photo": sizes}
        if caption:
            body["caption"] = caption
        return self._push("message", body)

    def press(self, chat_id: int, message_id: int, data: str) -> int:
        shown = self.shown[(chat_id, message_id)]
        query = {
            "id": f"cq{len(self.updates)}",
            "from": {"id": chat_id, "is_bot": False, "first_name": "Ada"},
            "message": {"message_id": message_id, "chat": {"id": chat_id, "type": "private"},
                        "text": shown.text},
            "data": data,
        }  # fmt: skip
        return self._push("callback_query", query)

    # -- reading what the bot did ----------------------------------------------

    def chat_messages(self, chat_id: int) -> list[Shown]:
        with self._cond:
            return sorted(
                (s for s in self.shown.values() if s.chat_id == chat_id),
                key=lambda s: s.message_id,
            )

    def texts(self, chat_id: int) -> list[str]:
        return [visible_text(s.text, s.parse_mode)[0] for s in self.chat_messages(chat_id)]

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        with self._cond:
            return [p for m, p in self.calls if m == method]

    def wait(self, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = predicate()
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError("the fake Telegram did not see what the test waited for")

    def wait_text(self, chat_id: int, needle: str, timeout: float = 15.0) -> Shown:
        def find() -> Shown | None:
            for s in self.chat_messages(chat_id):
                if needle in visible_text(s.text, s.parse_mode)[0]:
                    return s
            return None

        try:
            return self.wait(find, timeout)  # type: ignore[no-any-return]
        except AssertionError:
            raise AssertionError(
                f"no message in chat {chat_id} contains {needle!r}: {self.texts(chat_id)}"
            ) from None

    # -- the protocol ----------------------------------------------------------

    def handle(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "getUpdates":
            return self._get_updates(params)
        with self._cond:
            self.calls.append((method, params))
            if method == "getMe":
                me = {"id": self.bot_id, "is_bot": True, "username": self.username}
                return 200, {"ok": True, "result": me}
            if method == "sendMessage":
                return self._send(params)
            if method == "editMessageText":
                return self._edit(params)
            if method in ("answerCallbackQuery", "sendChatAction"):
                return 200, {"ok": True, "result": True}
            if method == "getFile":
                found = self.files.get(str(params.get("file_id")))
                if found is None:
                    return _bad("Bad Request: invalid file_id")
                result = {"file_id": params["file_id"], "file_path": found[0]}
                return 200, {"ok": True, "result": result}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def _get_updates(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        deadline = time.monotonic() + float(params.get("timeout") or 0)
        with self._cond:
            self.calls.append(("getUpdates", params))
            while True:
                if self.revoked:
                    return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
                if self.failing_polls > 0:
                    self.failing_polls -= 1
                    return 502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}
                found = [u for u in self.updates if u["update_id"] >= offset]
                left = deadline - time.monotonic()
                if found or left <= 0:
                    return 200, {"ok": True, "result": found}
                self._cond.wait(min(left, 0.5))

    def _check(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        text = str(params.get("text") or "")
        visible, error = visible_text(text, params.get("parse_mode"))
        if error:
            return _bad(f"Bad Request: can't parse entities: {error}")
        if not visible.strip():
            return _bad("Bad Request: message text is empty")
        if len(visible) > LIMIT:
            return _bad("Bad Request: message is too long")
        markup = params.get("reply_markup") or {}
        for row in markup.get("inline_keyboard") or []:
            for button in row:
                if len(str(button.get("callback_data", "")).encode()) > 64:
                    return _bad("Bad Request: BUTTON_DATA_INVALID")
        return None

    def _send(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        refused = self._check(params)
        if refused:
            return refused
        self._next_message += 1
        chat_id = int(params["chat_id"])
        markup = (params.get("reply_markup") or {}).get("inline_keyboard")
        shown = Shown(chat_id, self._next_message, params["text"], params.get("parse_mode"), markup)
        self.shown[(chat_id, shown.message_id)] = shown
        return 200, {
            "ok": True,
            "result": {"message_id": shown.message_id, "chat": {"id": chat_id}},
        }

    def _edit(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        key = (int(params["chat_id"]), int(params["message_id"]))
        shown = self.shown.get(key)
        if shown is None:
            return _bad("Bad Request: message to edit not found")
        refused = self._check(params)
        if refused:
            return refused
        markup = (params.get("reply_markup") or {}).get("inline_keyboard")
        if (shown.text, shown.parse_mode, shown.buttons) == (
            params["text"],
            params.get("parse_mode"),
            markup,
        ):
            return _bad("Bad Request: message is not modified")
        shown.text, shown.parse_mode, shown.buttons = (
            params["text"],
            params.get("parse_mode"),
            markup,
        )
        shown.edits += 1
        return 200, {"ok": True, "result": True}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: bytes, kind: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a long poll

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                params: dict[str, Any] = dict(parse_qsl(parts.query))
                if raw:
                    params.update(json.loads(raw))
                if parts.path.startswith(f"/file/bot{fake.token}/"):
                    path = parts.path.removeprefix(f"/file/bot{fake.token}/")
                    data = next((d for p, d in fake.files.values() if p == path), None)
                    if data is None or fake.revoked:
                        self._reply(404, b"Not Found", "text/plain")
                    else:
                        self._reply(200, data, "image/jpeg")
                    return
                prefix = f"/bot{fake.token}/"
                if not parts.path.startswith(prefix) or (
                    fake.revoked and "getUpdates" not in parts.path
                ):
                    status, body = (
                        401,
                        {"ok": False, "error_code": 401, "description": "Unauthorized"},
                    )
                else:
                    status, body = fake.handle(parts.path.removeprefix(prefix), params)
                self._reply(status, json.dumps(body).encode(), "application/json")

            do_GET = do_POST = _handle  # noqa: N815

        return Handler


def _bad(description: str) -> tuple[int, dict[str, Any]]:
    return 400, {"ok": False, "error_code": 400, "description": description}
