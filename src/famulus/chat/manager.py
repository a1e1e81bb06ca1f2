"""RunManager: one foreground run per session, queued messages, background, cancel.

Rules it holds:
- a message to a session with an active (foreground, still accepting) run is
  queued into that run and taken in at its next turn boundary;
- a backgrounded run leaves the foreground, so the person can chat on;
- cancel stops the asyncio task driving the run (model call and tools) and
  waits up to ``CANCEL_WAIT_S`` for it to record what was said;
- at shutdown, live runs are stopped like a cancel but recorded as interrupted;
- at start-up, runs left 'running' by a dead process are marked interrupted.

The manager only starts, finds and stops runs. What a turn needs (models,
prompt, toolsets) comes from the ``TurnBuilder``, and what a run reports goes
to the ``RunRecorder``; the run is given both and never calls back here.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import secrets
from dataclasses import dataclass, replace

from famulus.agent.scope import RunScope
from famulus.agent.sink import Decision
from famulus.chat.ports import ChatMemory, Models
from famulus.chat.queue import QueuedMessage
from famulus.chat.recorder import RunRecorder
from famulus.chat.run import SHUTDOWN_MESSAGE, Run
from famulus.chat.skills import SkillPrompts, parse_invocation
from famulus.chat.spec import COMMAND_CHARS, RunSpec
from famulus.chat.turns import TurnBuilder
from famulus.core import Core
from famulus.errors import Conflict, InvalidRequest, NotFound
from famulus.llm.types import ResolvedModel

log = logging.getLogger(__name__)

CANCEL_WAIT_S = 1.0
STOP_WAIT_S = 3.0  # server shutdown: all runs together
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True)
class ChatInput:
    message: str
    session_id: str
    images: list[dict[str, str]] | None = None
    skip_approvals: bool = False
    client_id: str | None = None
    # Set by the automation runner: where the run comes from, and whether it
    # may modify data (a read-only automation may not, approvals or not).
    origin: str = "chat"
    read_only: bool = False
    automation_id: int | None = None
    # Set by a client that cannot ask the person (the OpenAI-compatible API):
    # a tool needing approval is refused with this text, nobody is asked, and
    # no "the person declined" is learned (nobody did).
    approval_refusal: str | None = None


@dataclass(frozen=True)
class Submitted:
    run_id: str
    session_id: str
    queued: bool


def new_run_id() -> str:
    return "r_" + secrets.token_hex(8)


def check_images(images: list[dict[str, str]] | None, resolved: ResolvedModel) -> None:
    if not images:
        return
    if not resolved.vision:
        raise InvalidRequest(
            f"The chat model '{resolved.model_id}' cannot see images; send text only or "
            "choose a vision-capable chat model with PATCH /config.",
            loc=["body", "images"],
        )
    for image in images:
        if image["media_type"] not in IMAGE_TYPES:
            raise InvalidRequest(
                f"Image type must be one of {', '.join(IMAGE_TYPES)}.", loc=["body", "images"]
            )
        try:
            base64.b64decode(image["data"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest(
                "Image data must be valid base64.", loc=["body", "images"]
            ) from exc


class RunManager:
    def __init__(
        self, core: Core, models: Models, memory: ChatMemory, skills: SkillPrompts
    ) -> None:
        self.c = core
        self.skills = skills
        self.turns = TurnBuilder(core, models, memory, skills)
        self.recorder = RunRecorder(core, memory)
        self.events = core.events
        self.history = core.sessions.store
        self.runs = self.recorder.runs
        self.pending = self.recorder.pending
        self.active: dict[str, Run] = {}  # run_id -> live run
        self.foreground: dict[str, Run] = {}  # session_id -> its foreground run
        self.starting: dict[str, str] = {}  # session_id -> run whose start is being written

    def busy(self, session_id: str) -> bool:
        """A run in the session still takes messages (compaction must wait)."""
        run = self.foreground.get(session_id)
        return run is not None and run.accepting

    # -- submit --------------------------------------------------------------

    async def submit(self, inp: ChatInput) -> Submitted:
        if not inp.message.strip() and not inp.images:
            raise InvalidRequest(
                "The message is empty; send some text or an image.", loc=["body", "message"]
            )
        session = await self.c.sessions.get_active(inp.session_id)
        prompt_text = inp.message
        invocation = parse_invocation(inp.message)
        if invocation is not None:
            found = self.skills.invocation(*invocation)
            if found is None:
                raise NotFound(f"Unknown skill '/{invocation[0]}'. List skills with GET /skills.")
            prompt_text = found
        resolved = await self.turns.resolve("chat")
        check_images(inp.images, resolved)
        queued = QueuedMessage(prompt_text, inp.images, inp.client_id)
        current = self.foreground.get(session.session_id)
        if current is not None and current.accepting:
            return await self._queue(current, queued, inp)
        run = await self._start(session.session_id, session.name, resolved, queued, inp)
        return Submitted(run.id, session.session_id, False)

    async def _queue(self, current: Run, queued: QueuedMessage, inp: ChatInput) -> Submitted:
        """Persist the message before it is acknowledged (a kill -9 keeps it; start-up
        moves it into history), then hand it to the run."""
        pending_id = await self.pending.add(
            current.session_id, current.id, queued.text, inp.images, inp.client_id
        )
        if not current.accepting:  # the run ended while the row was written
            await self.pending.drop(pending_id)
            return await self.submit(inp)
        current.enqueue(replace(queued, pending_id=pending_id))
        return Submitted(current.id, current.session_id, True)

    async def _start(
        self,
        session_id: str,
        session_name: str,
        resolved: ResolvedModel,
        first: QueuedMessage,
        inp: ChatInput,
    ) -> Run:
        """Record the person's message, the run and ``run_started`` (one write), then
        drive the run in its own task."""
        spec = RunSpec(
            run_id=new_run_id(),
            session_id=session_id,
            session_name=session_name,
            resolved=resolved,
            prompt=first.content(),
            skip_approvals=inp.skip_approvals,
            approval_refusal=inp.approval_refusal,
            command=inp.message[:COMMAND_CHARS],
            scope=RunScope(
                origin=inp.origin,
                read_only=inp.read_only,
                automation_id=inp.automation_id,
                session_id=session_id,
            ),
        )
        run = Run(spec, self.recorder, self.turns)
        # A stream joining while run_started is written replays from it.
        self.starting[session_id] = spec.run_id
        try:
            await self.recorder.started(spec, inp.message, inp.images, inp.client_id)
        finally:
            if self.starting.get(session_id) == spec.run_id:
                del self.starting[session_id]
        self.active[run.id] = run
        self.foreground[session_id] = run
        run.task = asyncio.create_task(self._drive(run), name=f"famulus-run-{run.id}")
        return run

    async def _drive(self, run: Run) -> None:
        """The run's task: the run itself, then what follows a finished run."""
        try:
            if await run.main():
                await self.after_finish(run)
        finally:
            self.run_done(run)

    def in_progress(self, session_id: str) -> list[str]:
        """The session's foreground run, if one is going (a stream joining now
        is sent it from its start). Backgrounded runs are reported by
        ``background_task`` events and are not replayed."""
        run = self.foreground.get(session_id)
        ids = [run.id] if run is not None and not run.backgrounded else []
        starting = self.starting.get(session_id)
        return ids + ([starting] if starting is not None else [])

    # -- control -------------------------------------------------------------

    async def _live_or_error(self, run_id: str) -> Run:
        run = self.active.get(run_id)
        if run is not None:
            return run
        if await self.runs.get(run_id) is None:
            raise NotFound(f"No run with id '{run_id}'.")
        raise Conflict(f"Run '{run_id}' has already finished.")

    async def background(self, run_id: str) -> None:
        run = await self._live_or_error(run_id)
        if run.backgrounded:
            return
        run.backgrounded = True
        if self.foreground.get(run.session_id) is run:
            del self.foreground[run.session_id]
        await self.runs.mark_backgrounded(run.id)
        await self.events.publish(run.session_id, "run_backgrounded", run_id=run.id)
        await self.events.publish(
            run.session_id,
            "background_task",
            run_id=run.id,
            task_id=run.id,
            command=run.spec.command,
            status="started",
        )

    async def cancel(self, run_id: str | None, session_id: str | None) -> str | None:
        """Cancel one run; the run id, or None when nothing runs."""
        run = self._pick(run_id, session_id)
        if run is None:
            if run_id is not None and await self.runs.get(run_id) is None:
                raise NotFound(f"No run with id '{run_id}'.")
            if session_id is not None:
                await self.c.sessions.get(session_id)
            return None
        await self._stop_task(run)
        return run.id

    def _pick(self, run_id: str | None, session_id: str | None) -> Run | None:
        if run_id is not None:
            run = self.active.get(run_id)
            return run if run is not None and (session_id in (None, run.session_id)) else None
        fg = self.foreground.get(session_id or "")
        if fg is not None:
            return fg
        in_session = [r for r in self.active.values() if r.session_id == session_id]
        return in_session[-1] if in_session else None

    async def _stop_task(self, run: Run) -> None:
        if run.task is None or run.task.done():
            return
        if not run.ending:
            run.task.cancel()
        await asyncio.wait({run.task}, timeout=CANCEL_WAIT_S)

    async def answer(self, run_id: str, tool_id: str, approved: bool, result: str | None) -> None:
        await self._decide(run_id, tool_id, Decision(approved, result))

    async def _decide(self, run_id: str, tool_id: str, decision: Decision) -> None:
        run = await self._live_or_error(run_id)
        future = run.approvals.get(tool_id)
        if future is None or future.done():
            raise NotFound(
                f"Run '{run_id}' is not waiting for an approval of tool call '{tool_id}'."
            )
        future.set_result(decision)

    # -- lifecycle -----------------------------------------------------------

    def run_done(self, run: Run) -> None:
        self.active.pop(run.id, None)
        if self.foreground.get(run.session_id) is run:
            del self.foreground[run.session_id]

    async def after_finish(self, run: Run) -> None:
        await self.recorder.memory_after_run(run.spec)
        leftovers = run.undelivered()
        if leftovers:  # arrived after the last turn boundary: answer them in a new run
            self.run_done(run)
            for left in leftovers:
                await self.submit(
                    ChatInput(
                        left.text,
                        run.session_id,
                        left.images,
                        run.spec.skip_approvals,
                        left.client_id,
                        approval_refusal=run.spec.approval_refusal,
                    )
                )
                if left.pending_id is not None:  # now in history through the new run
                    await self.pending.drop(left.pending_id)

    async def session_removed(self, session_id: str) -> None:
        for run in [r for r in self.active.values() if r.session_id == session_id]:
            await self._stop_task(run)

    async def recover(self) -> None:
        """Start-up after a crash: runs left 'running' are interrupted, and messages
        accepted for them but never taken in go into history as unanswered."""
        for row in await self.runs.interrupt_running(SHUTDOWN_MESSAGE):
            await self.events.publish(
                row.session_id,
                "run_error",
                run_id=row.run_id,
                message=SHUTDOWN_MESSAGE,
                recoverable=False,
            )
        await self.pending.recover({"unanswered": True})

    async def stop(self) -> None:
        """Server shutdown: stop every live run so each records what was said (partial
        text, ``text`` and ``run_error`` events) while storage is still open; waits at
        most ``STOP_WAIT_S`` in all. Called when shutdown begins and again by the
        lifespan; the second call finds nothing left."""
        tasks: set[asyncio.Task[None]] = set()
        for run in list(self.active.values()):
            if run.task is not None and not run.task.done():
                if not run.ending:
                    run.stop_status = "interrupted"
                    run.task.cancel()
                tasks.add(run.task)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        if pending:
            log.warning(
                "%d run(s) did not record their end within %.0f s", len(pending), STOP_WAIT_S
            )
