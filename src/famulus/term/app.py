"""``famulus chat``: the loop of the terminal client.

Read a line; a built-in command (``/new``, ``/sessions``, ``/switch``,
``/cancel``, ``/help``, ``/quit``) is done here, anything else (a skill
``/name args`` included) is sent as a chat message and its run followed on the
session's event stream until it ends. The stream is opened before the
message is sent, so no event of the run is missed; a dropped stream is
reopened from the last event id seen.

Ctrl-C while a run is followed asks the server to cancel it (a second Ctrl-C
stops waiting); at the prompt, Ctrl-C twice or Ctrl-D quits.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from rich.console import Console

from famulus.term.client import ApiError, Event, FamulusClient, Unreachable
from famulus.term.input import LineInput, make_input
from famulus.term.render import Renderer, one_line, short_args

EXIT_OK, EXIT_CONNECT = 0, 2
DEFAULT_NAME = "Terminal"
RESUME_SHOWN = 6  # messages shown when a session is resumed or switched to
_RECONNECTS = 3
_END = ("run_finished", "run_error", "run_cancelled")

COMMANDS = {
    "new": "start a new session (/new [name])",
    "sessions": "list recent sessions",
    "switch": "continue another session (/switch ID or its number in /sessions)",
    "cancel": "cancel the session's run (also a backgrounded one)",
    "help": "show this help",
    "quit": "leave (also Ctrl-D)",
}
HELP_LINE = "/help lists commands · Tab completes /skills · Ctrl-C cancels a run · Ctrl-D quits"


@dataclass
class _Follow:
    """What is known about the run being followed."""

    run_id: str
    client_id: str
    queued: bool
    cancel_asked: bool = False
    ingested: bool = False
    awaiting_next: bool = False  # our queued message will start the next run
    last_id: int | None = None


class ChatApp:
    """One terminal conversation with one server, one session at a time."""

    def __init__(self, client: FamulusClient, console: Console, reader: LineInput) -> None:
        self.client = client
        self.console = console
        self.show = Renderer(console)
        self.reader = reader
        self.session_id = ""
        self.session_name = ""
        self._listed: list[str] = []  # session ids in the order /sessions showed them
        self._follow: _Follow | None = None
        self._busy: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_note = "Stopped."
        self._early_interrupt = False  # Ctrl-C came while no prompt was shown
        self._cancels: set[asyncio.Future[None]] = set()

    # -- start ---------------------------------------------------------------
    async def open(self, session_id: str | None) -> None:
        """Check the server and the key, then open or create the session.
        Raises ``Unreachable`` or ``ApiError`` for the caller to report."""
        version = await self.client.check()
        if session_id:
            info = await self.client.session(session_id)
            self._enter(info["session_id"], info["name"])
            self.show.note(f"famulus {version} at {self.client.base_url}")
            await self._show_recent(resumed=True)
        else:
            info = await self.client.new_session(DEFAULT_NAME)
            self._enter(info["session_id"], info["name"])
            self.show.note(f"famulus {version} at {self.client.base_url}")
            self.show.note(f"New session {info['name']!r} ({self.session_id})", "bold")
        self.show.note(HELP_LINE)
        await self._refresh_skills()

    def _enter(self, session_id: str, name: str) -> None:
        self.session_id, self.session_name = session_id, name
        self.reader.set_prompt(name)

    async def _show_recent(self, resumed: bool) -> None:
        messages = [
            m
            for m in await self.client.history(self.session_id)
            if m.get("role") in ("user", "assistant") and str(m.get("content") or "").strip()
        ]
        verb = "Resumed" if resumed else "Switched to"
        self.show.note(
            f"{verb} session {self.session_name!r} ({self.session_id}), {len(messages)} messages",
            "bold",
        )
        for message in messages[-RESUME_SHOWN:]:
            if message["role"] == "user":
                self.show.user(str(message["content"]))
            else:
                self.show.markdown(str(message["content"]))

    async def _refresh_skills(self) -> None:
        """Skills can appear at any time (installed, or dropped into a folder);
        asked again before each prompt so Tab offers the current ones."""
        try:
            skills = await self.client.skills()
        except (ApiError, Unreachable):
            return
        self.reader.set_skills({str(s["name"]): str(s.get("description", "")) for s in skills})

    # -- the loop ------------------------------------------------------------
    async def loop(self) -> int:
        self._loop = asyncio.get_running_loop()
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            return await self._read_eval()
        finally:
            signal.signal(signal.SIGINT, previous)

    async def _read_eval(self) -> int:
        armed = False  # Ctrl-C pressed once at the prompt
        while True:
            try:
                if self._early_interrupt:  # Ctrl-C between two prompts
                    self._early_interrupt = False
                    raise KeyboardInterrupt
                line = await self.reader.line()
            except KeyboardInterrupt:
                if armed:
                    return EXIT_OK
                armed = True
                self.show.note("(press Ctrl-C again to quit, or Ctrl-D)")
                continue
            except EOFError:
                return EXIT_OK
            armed = False
            line = line.strip()
            if not line:
                continue
            if line.split(" ")[0] in ("/quit", "/exit"):
                return EXIT_OK
            await self._guarded(self._handle(line))
            await self._refresh_skills()

    async def _guarded(self, work: Any) -> None:
        """Run one command as a task Ctrl-C can stop; report a failed call in
        one line and go back to the prompt."""
        self._busy = asyncio.ensure_future(work)
        try:
            with self.reader.hold():
                await asyncio.wait([self._busy])
            if self._busy.cancelled():
                self.show.note(self._stop_note, "yellow")
            elif (exc := self._busy.exception()) is not None:
                if isinstance(exc, ApiError):
                    self.show.error(exc.detail)
                elif isinstance(exc, Unreachable):
                    self.show.error(f"Lost the server at {self.client.base_url} ({exc}).")
                else:  # a bug or a surprising answer: say so, keep the conversation
                    self.show.error(f"Unexpected error: {exc!r}")
        finally:
            self._busy = None
            self.show.end_run()

    def _on_sigint(self, _signum: int, _frame: FrameType | None) -> None:
        """Ctrl-C while a run is followed: first ask the server to cancel it,
        then stop waiting. Runs in the main thread between bytecodes, so it
        only schedules work on the loop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        follow, busy = self._follow, self._busy
        if follow is not None and not follow.cancel_asked:
            follow.cancel_asked = True
            self.show.note("Cancelling… (Ctrl-C again to stop waiting)", "yellow")
            task = asyncio.ensure_future(self._cancel_quietly(follow.run_id))
            self._cancels.add(task)  # the loop keeps only a weak reference
            task.add_done_callback(self._cancels.discard)
        elif busy is not None:
            self._stop_note = (
                "Stopped waiting; the run may go on (/cancel stops it)."
                if follow is not None
                else "Stopped."
            )
            busy.cancel()
        elif not self.reader.interrupt():
            self._early_interrupt = True

    async def _cancel_quietly(self, run_id: str) -> None:
        try:
            await self.client.cancel(run_id=run_id)
        except (ApiError, Unreachable) as exc:
            self.show.error(f"Could not cancel: {exc}")

    # -- commands ------------------------------------------------------------
    async def _handle(self, line: str) -> None:
        name, _, rest = line[1:].partition(" ") if line.startswith("/") else ("", "", "")
        handler: dict[str, Callable[[str], Any]] = {
            "new": self._new,
            "sessions": self._sessions,
            "switch": self._switch,
            "cancel": self._cancel,
            "help": self._help,
        }
        if name in handler:
            await handler[name](rest.strip())
        else:
            await self._turn(line)

    async def _new(self, name: str) -> None:
        info = await self.client.new_session(name or DEFAULT_NAME)
        self._enter(info["session_id"], info["name"])
        self.show.note(f"New session {info['name']!r} ({self.session_id})", "bold")

    async def _sessions(self, _rest: str) -> None:
        sessions = await self.client.sessions()
        self._listed = [str(s["session_id"]) for s in sessions]
        for number, s in enumerate(sessions, 1):
            mark = "*" if s["session_id"] == self.session_id else " "
            self.show.note(
                f"{mark}{number:>3}  {s['session_id']}  {one_line(s['name'], 40)}  "
                f"({s['message_count']} messages, {s['last_activity']})",
                "bold" if mark == "*" else "",
            )

    async def _switch(self, target: str) -> None:
        if not target:
            self.show.error("Which session? /switch ID (see /sessions).")
            return
        if target.isdigit() and 0 < int(target) <= len(self._listed):
            target = self._listed[int(target) - 1]
        info = await self.client.session(target)
        self._enter(info["session_id"], info["name"])
        await self._show_recent(resumed=False)

    async def _cancel(self, _rest: str) -> None:
        status = await self.client.cancel(session_id=self.session_id)
        self.show.note("Cancelled." if status == "cancelled" else "Nothing is running.")

    async def _help(self, _rest: str) -> None:
        self.show.note(HELP_LINE, "")
        for name, what in COMMANDS.items():
            self.show.note(f"  /{name:<9} {what}", "")
        skills = self.reader.skills()
        if skills:
            self.show.note("Skills (sent to the agent as /name args):", "")
            for name, what in sorted(skills.items()):
                self.show.note(f"  /{name:<9} {one_line(what, 70)}", "")

    # -- a chat turn ---------------------------------------------------------
    async def _turn(self, text: str) -> None:
        """Open the stream, send, follow the run to its end."""
        stream = self.client.events(self.session_id)
        try:
            await _wait_open(stream)
            client_id = f"term-{uuid.uuid4().hex[:12]}"
            sent = await self.client.send(self.session_id, text, client_id)
            self._follow = _Follow(str(sent["run_id"]), client_id, bool(sent.get("queued")))
            if self._follow.queued:
                self.show.note("(queued: a run is already going on in this session)")
            await self._consume(stream, self._follow)
        finally:
            self._follow = None
            await stream.aclose()

    async def _consume(self, stream: AsyncGenerator[Event, None], follow: _Follow) -> None:
        """Draw events until the followed run ends; reconnect from the last id
        when the stream drops."""
        failures = 0
        while True:
            try:
                async for event in stream:
                    failures = 0
                    if event.id is not None:
                        follow.last_id = event.id
                    if await self._on_event(event, follow):
                        return
            except Unreachable:
                pass
            failures += 1
            if failures > _RECONNECTS:
                raise Unreachable("the event stream ended before the run did")
            await stream.aclose()
            await asyncio.sleep(0.5 * failures)
            stream = self.client.events(self.session_id, after=follow.last_id)

    async def _on_event(self, event: Event, follow: _Follow) -> bool:
        """Draw one event; True when the followed run (and so the turn) ended."""
        data, kind = event.data, event.type
        run_id = str(data.get("run_id", ""))
        if kind == "run_started" and follow.awaiting_next:
            follow.run_id, follow.awaiting_next = run_id, False
        if run_id and run_id != follow.run_id:
            return False
        depth = int(data.get("depth", 0) or 0)
        if kind == "text_delta" and depth == 0:
            self.show.delta(str(data.get("content", "")))
        elif kind == "text":
            self.show.text(str(data.get("content", "")), depth)
        elif kind == "thinking":
            self.show.thinking(str(data.get("status", "")))
        elif kind == "tool_call":
            self.show.tool_call(str(data.get("name")), data.get("args"), depth)
        elif kind == "tool_result":
            result = str(data.get("preview") or data.get("result") or "")
            self.show.tool_result(str(data.get("name")), result, bool(data.get("error")), depth)
        elif kind == "approval_needed":
            await self._approve(data, follow)
        elif kind == "message_ingested" and data.get("client_id") == follow.client_id:
            follow.ingested = True
        elif kind == "run_backgrounded":
            self.show.note("The run went on in the background; its result will come later.")
            return True
        elif kind in _END:
            return self._ended(kind, data, follow)
        return False

    def _ended(self, kind: str, data: dict[str, Any], follow: _Follow) -> bool:
        if kind == "run_finished":
            self.show.usage(data.get("usage") or {})
        elif kind == "run_error":
            self.show.error(f"Error: {data.get('message', 'the run failed')}")
        else:
            self.show.note("Cancelled.", "yellow")
        # A queued message that came after the run's last turn boundary starts
        # the next run: keep following until that one ends.
        if follow.queued and not follow.ingested and kind == "run_finished":
            follow.queued, follow.awaiting_next = False, True
            return False
        return True

    async def _approve(self, data: dict[str, Any], follow: _Follow) -> None:
        """Ask inline; Enter alone says no. Ctrl-C at the question cancels the run."""
        self.show.pause()
        question = f"Approve {data.get('name')} {short_args(data.get('args'))}? [y/N] "
        description = str(data.get("description") or "")
        if description:
            self.show.note(description)
        try:
            approved = await self.reader.confirm(question)
        except (KeyboardInterrupt, EOFError):
            follow.cancel_asked = True
            self.show.note("Cancelling…", "yellow")
            await self.client.cancel(run_id=follow.run_id)
            return
        try:
            await self.client.answer(follow.run_id, str(data.get("tool_id")), approved)
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.show.note("Already answered elsewhere.")
            return
        self.show.note("Approved." if approved else "Denied.")


async def _wait_open(stream: AsyncIterator[Event]) -> None:
    """Until the server's ``: connected`` comment: from then on every event of
    the session reaches this stream."""
    async for event in stream:
        if event.type == "comment":
            return
    raise Unreachable("the event stream closed at once")


async def _main(url: str, key: str, session_id: str | None, console: Console) -> int:
    client = FamulusClient(url, key)
    reader = make_input(COMMANDS)
    app = ChatApp(client, console, reader)
    try:
        try:
            await app.open(session_id)
        except Unreachable as exc:
            _fail(f"cannot reach famulus at {client.base_url} ({exc})")
            return EXIT_CONNECT
        except ApiError as exc:
            _fail(_start_error(exc, client.base_url, session_id))
            return EXIT_CONNECT
        return await app.loop()
    finally:
        await client.aclose()


def _start_error(exc: ApiError, url: str, session_id: str | None) -> str:
    if exc.status == 401:
        return f"the server at {url} refused the API key (check --key or FAMULUS_API_KEY)"
    if exc.status == 429:
        return f"the server at {url} is refusing keys from here for a while ({exc.detail})"
    if exc.status == 404 and session_id:
        return f"no session {one_line(session_id, 64)!r} on {url} (see /sessions)"
    return f"{url}: {exc.detail}"


def _fail(line: str) -> None:
    print(f"famulus: {line}", file=sys.stderr)


def sendable_key(key: str) -> bool:
    """Whether ``key`` can travel in an ``Authorization`` header. Otherwise the
    HTTP library fails in a way that reads like an unreachable server, or with a
    traceback."""
    return bool(key) and all("!" <= ch <= "~" for ch in key)


def run_chat(url: str, key: str, session_id: str | None) -> int:
    """The exit status: 0 after /quit, Ctrl-D or Ctrl-C twice; 2 when the server
    cannot be reached, refuses the key or has no such session."""
    key = key.strip()  # pasted with a blank or a line break
    if not sendable_key(key):
        _fail(
            "the API key has a character no famulus key has (a blank inside it or a "
            "non-ASCII letter); check --key or FAMULUS_API_KEY"
        )
        return EXIT_CONNECT
    console = Console(highlight=False)
    try:
        return asyncio.run(_main(url, key, session_id, console))
    except KeyboardInterrupt:
        return 130
