"""The terminal client's following of a run, against a scripted HTTP transport:
a dropped event stream is reopened from the last id, and a queued message
that starts the next run is followed into that run."""

from __future__ import annotations

import io
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import httpx
import pytest
from rich.console import Console

from famulus.term.app import ChatApp
from famulus.term.client import FamulusClient

SID = "s_0123456789abcdef"


Events = list[tuple[int | None, dict[str, Any]]]


def _sse(events: Events) -> bytes:
    out = []
    for event_id, data in events:
        head = f"id: {event_id}\n" if event_id is not None else ""
        out.append(f"{head}event: {data['type']}\ndata: {json.dumps(data)}\n\n")
    return "".join(out).encode()


class FakeReader:
    """The LineInput the loop needs; these tests never read a line."""

    def __init__(self) -> None:
        self._skills: dict[str, str] = {}

    def set_prompt(self, session_name: str) -> None:
        pass

    def set_skills(self, skills: dict[str, str]) -> None:
        self._skills = skills

    def skills(self) -> dict[str, str]:
        return self._skills

    async def line(self) -> str:
        raise EOFError

    async def confirm(self, question: str) -> bool:
        return False

    def hold(self) -> AbstractContextManager[None]:
        return nullcontext()

    def interrupt(self) -> bool:
        return False


class Server:
    """Answers POST /chat/message and serves the scripted event streams in turn;
    a stream's events are made once the client reads past ``: connected``, so
    they can echo the ``client_id`` the message was sent with."""

    def __init__(self, sent: dict[str, Any], streams: list[Callable[[str], Events]]) -> None:
        self.sent, self.streams = sent, streams
        self.stream_params: list[dict[str, str]] = []
        self.client_id = ""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/chat/message":
            self.client_id = json.loads(request.content)["client_id"]
            return httpx.Response(202, json=self.sent)
        if request.url.path == f"/chat/events/{SID}":
            self.stream_params.append(dict(request.url.params))
            make = self.streams.pop(0)

            async def body() -> AsyncIterator[bytes]:
                yield b": connected\n\n"
                yield _sse(make(self.client_id))

            return httpx.Response(
                200, content=body(), headers={"content-type": "text/event-stream"}
            )
        return httpx.Response(404, json={"detail": "no", "code": "not_found"})


async def _turn(server: Server, terminal: bool = False) -> str:
    """The turn's screen output, escape sequences removed."""
    out = io.StringIO()
    client = FamulusClient("http://famulus.test", "k", transport=httpx.MockTransport(server))
    console = Console(file=out, width=80, force_terminal=terminal, color_system=None)
    app = ChatApp(client, console, FakeReader())
    app.session_id = SID
    try:
        await app._turn("hello")
    finally:
        await client.aclose()
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", out.getvalue())


def _run(run_id: str, text: str, first_id: int, **extra: Any) -> Events:
    return [
        (first_id, {"type": "run_started", "run_id": run_id, "session_id": SID, **extra}),
        (first_id + 1, {"type": "text", "run_id": run_id, "content": text, "depth": 0}),
        (first_id + 2, {"type": "run_finished", "run_id": run_id, "usage": {}}),
    ]


@pytest.mark.parametrize("terminal", [False, True])
async def test_a_dropped_stream_is_reopened_from_the_last_event_id(
    terminal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "xterm")  # with force_terminal: a live region that redraws
    started = (4, {"type": "run_started", "run_id": "r_1", "session_id": SID})
    delta = (None, {"type": "text_delta", "run_id": "r_1", "content": "Half", "depth": 0})
    rest = [
        (5, {"type": "text", "run_id": "r_1", "content": "Half and whole.", "depth": 0}),
        (6, {"type": "run_finished", "run_id": "r_1", "usage": {"prompt_tokens": 3}}),
    ]
    server = Server(
        {"run_id": "r_1", "session_id": SID, "queued": False},
        [lambda _: [started, delta], lambda _: rest],
    )
    shown = await _turn(server, terminal)
    assert server.stream_params == [{"stream": "true"}, {"stream": "true", "after": "4"}]
    assert "Half and whole." in shown and "3 in · 0 out tokens" in shown


async def test_a_queued_message_is_followed_into_the_run_it_starts() -> None:
    events = [*_run("r_1", "Answer to the earlier message.", 1)]
    events += _run("r_2", "Answer to hello.", 4)
    events += _run("r_3", "A later run nobody asked about here.", 7)
    server = Server({"run_id": "r_1", "session_id": SID, "queued": True}, [lambda _: events])
    shown = await _turn(server)
    assert "(queued" in shown
    assert "Answer to hello." in shown and "later run" not in shown


async def test_a_queued_message_taken_in_ends_with_its_run() -> None:
    def events(client_id: str) -> Events:
        taken = (3, {"type": "message_ingested", "run_id": "r_1", "client_id": client_id})
        first = _run("r_1", "Both answered.", 1)
        return [first[0], taken, *first[1:], *_run("r_2", "Not ours.", 5)]

    server = Server({"run_id": "r_1", "session_id": SID, "queued": True}, [events])
    shown = await _turn(server)
    assert "Both answered." in shown and "Not ours." not in shown
