"""One agent run in one session: drives the agent and reports what happens.

The run is the agent's ``EventSink``: each report becomes a persisted session
event and, for the main agent, a history row written the moment the message
is complete (the user message is written at submit, so a crash loses at most
the message being generated). A backgrounded run keeps going but its progress
events are replaced by ``background_task`` events.

A run is built from its spec, a ``RunRecorder`` (where reports are kept) and a
``TurnBuilder`` (how its agent is assembled); it knows nothing of the run
manager, which starts it and learns of its end by awaiting ``main()``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from contextlib import AbstractContextManager
from typing import Any

from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.run import AgentRun
from pydantic_ai.usage import RunUsage

from famulus.agent import scope
from famulus.agent.driver import drive, result_text
from famulus.agent.factory import RUN_LIMITS
from famulus.agent.failures import describe
from famulus.agent.secret_args import public_args
from famulus.agent.sink import AgentDeps, Decision
from famulus.chat.queue import QueuedMessage
from famulus.chat.recorder import RunRecorder
from famulus.chat.spec import RunSpec
from famulus.chat.turns import TurnBuilder
from famulus.llm.types import ResolvedModel
from famulus.store.runs import RunUsageRow
from famulus.usage.service import BudgetExceeded
from famulus.usage.tag import UsageTag, tagged

log = logging.getLogger(__name__)

# Progress a backgrounded run no longer interleaves into the foreground transcript.
PROGRESS_EVENTS = frozenset(
    {"thinking", "reasoning", "text_delta", "text", "tool_call", "tool_result"}
)
SHUTDOWN_MESSAGE = (
    "The server stopped while this run was in progress; what was said before is kept."
)


async def usage_row(usage: RunUsage, model: ResolvedModel, run_id: str) -> RunUsageRow:
    """The run's tokens, and its cost as the usage ledger priced each request
    (the research sub-agent's on its own model); 0 when no price is known."""
    cost = await model.meter.run_cost(run_id) if model.meter is not None else None
    return RunUsageRow(
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, round(cost or 0.0, 6)
    )


class RunState(enum.Enum):
    """Where a run is in its life; only RUNNING takes queued messages."""

    RUNNING = "running"  # the agent loop goes on; new messages join it
    FINISHING = "finishing"  # the loop ended; the result is being recorded
    ENDING = "ending"  # stopped or failed; recording that (a further cancel would cut it short)
    DONE = "done"


class Run:
    def __init__(self, spec: RunSpec, recorder: RunRecorder, turns: TurnBuilder) -> None:
        self.spec = spec
        self.recorder = recorder
        self.turns = turns
        self.state = RunState.RUNNING
        # Out of the foreground: progress events are replaced by background_task ones.
        # Independent of the state: a backgrounded run still runs, finishes or ends.
        self.backgrounded = False
        # How a cancelled task is recorded: "interrupted" when the server stops.
        self.stop_status = "cancelled"
        self.task: asyncio.Task[None] | None = None  # the manager's task around main()
        self.usage = RunUsage()
        self._agent_run: AgentRun[AgentDeps, str] | None = None
        self._early: list[QueuedMessage] = []
        self._queued: dict[str, QueuedMessage] = {}
        self.approvals: dict[str, asyncio.Future[Decision]] = {}
        self.deps: AgentDeps | None = None

    @property
    def id(self) -> str:
        return self.spec.run_id

    @property
    def session_id(self) -> str:
        return self.spec.session_id

    @property
    def accepting(self) -> bool:
        """New messages join this run (else they start a new one)."""
        return self.state is RunState.RUNNING

    @property
    def ending(self) -> bool:
        return self.state is RunState.ENDING

    # -- EventSink -----------------------------------------------------------

    async def emit(self, type_: str, /, **fields: Any) -> None:
        if self.backgrounded and type_ in PROGRESS_EVENTS:
            return
        await self.recorder.event(self.spec, type_, **fields)

    def emit_live(self, type_: str, /, **fields: Any) -> None:
        if not self.backgrounded:
            self.recorder.live(self.spec, type_, **fields)

    async def response_complete(self, response: ModelResponse) -> None:
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        calls = [
            {"id": p.tool_call_id, "name": p.tool_name, "arguments": public_args(p.args_as_dict())}
            for p in response.parts
            if isinstance(p, ToolCallPart)
        ]
        if text or calls:
            await self.recorder.message(self.spec, "assistant", text, tool_calls=calls or None)

    async def tool_returned(self, part: ToolReturnPart, *, error: bool) -> None:
        text = result_text(part)
        await self.recorder.message(
            self.spec,
            "tool",
            text,
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            meta={"error": True} if error else None,
        )
        await self.recorder.sources(self.spec)
        if error:
            await self.recorder.learning_event(
                self.spec,
                "tool_failed",
                f"Tool {part.tool_name} failed: {text[:200]}",
                {"tool": part.tool_name},
            )

    async def ingested(self, enqueue_id: str, messages: tuple[ModelMessage, ...]) -> None:
        queued = self._queued.pop(enqueue_id, None)
        if queued is None:
            return
        await self.recorder.queued_to_history(self.spec, queued, None)
        await self.emit("message_ingested", client_id=queued.client_id)

    async def decide(
        self, tool_id: str, name: str, args: dict[str, Any], description: str
    ) -> Decision:
        if self.spec.scope.read_only:
            # Nobody is asked, so nobody declined: no approval event, no learning event.
            return Decision(False, refusal=scope.READ_ONLY_REFUSAL)
        if self.spec.skip_approvals:
            return Decision(True)
        if self.spec.approval_refusal is not None:
            # The client cannot ask anyone; like read-only, nobody declined.
            return Decision(False, refusal=self.spec.approval_refusal)
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.approvals[tool_id] = future
        try:
            await self.emit(
                "approval_needed", tool_id=tool_id, name=name, args=args, description=description
            )
            decision = await future
        finally:
            self.approvals.pop(tool_id, None)
        if not decision.approved and decision.refusal is None:  # the person declined
            await self.recorder.learning_event(
                self.spec,
                "approval_denied",
                f"The person declined {name}.",
                {"tool": name, "args": args, "reason": decision.reason},
            )
        return decision

    # -- queued messages -----------------------------------------------------

    def enqueue(self, message: QueuedMessage) -> None:
        if self._agent_run is None:
            self._early.append(message)
            return
        content = message.content()
        items = content if isinstance(content, list) else [content]
        enqueue_id = self._agent_run.enqueue(*items)
        if enqueue_id is not None:
            self._queued[enqueue_id] = message

    def withdraw(self, pending_id: int) -> bool:
        """Take back a queued message the agent has not taken in; False once it has
        (or when this run never held it)."""
        for message in self._early:
            if message.pending_id == pending_id:
                self._early.remove(message)
                return True
        for enqueue_id, message in list(self._queued.items()):
            if message.pending_id == pending_id:
                if self._agent_run is None or not self._agent_run.dequeue(enqueue_id):
                    return False  # already in a model request
                del self._queued[enqueue_id]
                return True
        return False

    def _attach(self, agent_run: AgentRun[AgentDeps, str]) -> None:
        self._agent_run = agent_run
        early, self._early = self._early, []
        for message in early:
            self.enqueue(message)

    def undelivered(self) -> list[QueuedMessage]:
        left = [*self._early, *self._queued.values()]
        self._early, self._queued = [], {}
        return left

    # -- the run -------------------------------------------------------------

    async def main(self) -> bool:
        """Drive the run to its end and record it; True when it finished normally."""
        try:
            with self._usage_tag():
                await self._execute()
            return True
        except asyncio.CancelledError:
            await self._stopped()
        except Exception as exc:  # every failure becomes a run_error event
            await self._failed(exc)
        finally:
            self.state = RunState.DONE
        return False

    def _usage_tag(self) -> AbstractContextManager[UsageTag]:
        """Model requests of this run (and of compaction or research within it)
        are recorded for its session, run and automation."""
        run_scope = self.spec.scope
        return tagged(
            source="automation" if run_scope.origin == "automation" else "chat",
            session_id=self.spec.session_id,
            run_id=self.spec.run_id,
            automation_id=run_scope.automation_id,
        )

    async def _execute(self) -> None:
        """Drive the agent (``run_started`` was recorded when the run was started)."""
        spec = self.spec
        prepared = await self.turns.for_run(spec)
        self.deps = AgentDeps(
            sink=self,
            session_id=spec.session_id,
            run_id=spec.run_id,
            timezone=prepared.timezone,
            descriptions=prepared.descriptions,
        )
        with scope.running(spec.scope):
            result = await drive(
                prepared.agent,
                prompt=spec.prompt,
                history=prepared.history,
                deps=self.deps,
                limits=RUN_LIMITS,
                descriptions=prepared.descriptions,
                on_start=self._attach,
            )
        await self.recorder.sources(spec)
        self.state = RunState.FINISHING
        self.usage = result.usage
        usage = await usage_row(result.usage, spec.resolved, spec.run_id)
        events = self._background_events("completed", result.output, always_text=True)
        events.append(("run_finished", {"usage": usage.__dict__}))
        await self.recorder.ended(spec, ("finished", usage, None), events)

    async def _save_partial(self) -> str:
        """Keep the text streamed so far and the queued messages never taken in."""
        await self.recorder.sources(self.spec)
        partial = "".join(self.deps.partial_text) if self.deps else ""
        if partial:
            await self.recorder.message(self.spec, "assistant", partial, meta={"interrupted": True})
        for message in self.undelivered():
            await self.recorder.queued_to_history(self.spec, message, {"unanswered": True})
        return partial

    def _background_events(
        self, status: str, text: str, *, always_text: bool = False
    ) -> list[tuple[str, dict[str, Any]]]:
        """A backgrounded run's end, with what it said delivered like a result
        (none for a run in the foreground: its progress was shown as it came).
        A completed run always delivers its result; a stopped one only text it had."""
        if not self.backgrounded:
            return []
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "background_task",
                {"task_id": self.id, "command": self.spec.command, "status": status},
            )
        ]
        if text or always_text:
            events.append(("text", {"content": text, "depth": 0}))
        return events

    async def _usage_so_far(self) -> RunUsageRow:
        usage = self._agent_run.usage if self._agent_run is not None else self.usage
        return await usage_row(usage, self.spec.resolved, self.spec.run_id)

    async def _stopped(self) -> None:
        self.state = RunState.ENDING
        partial = await self._save_partial()
        usage = await self._usage_so_far()
        if self.stop_status == "interrupted":
            events = self._background_events("failed", partial)
            events.append(("run_error", {"message": SHUTDOWN_MESSAGE, "recoverable": False}))
            await self.recorder.ended(self.spec, ("interrupted", usage, SHUTDOWN_MESSAGE), events)
            return
        events = self._background_events("cancelled", partial)
        events.append(("run_cancelled", {}))
        await self.recorder.ended(self.spec, ("cancelled", usage, None), events)

    async def _failed(self, exc: Exception) -> None:
        failure = describe(exc, self.spec.resolved)
        # Provider failures are expected and already explained to the client; a
        # stack trace only helps when something of ours broke.
        expected = isinstance(
            exc, ModelAPIError | UnexpectedModelBehavior | UsageLimitExceeded | BudgetExceeded
        )
        log.warning(
            "run %s failed: %s", self.id, failure.message, exc_info=None if expected else exc
        )
        log.debug("run %s failure detail", self.id, exc_info=exc)
        self.state = RunState.ENDING
        partial = await self._save_partial()
        events = self._background_events("failed", partial)
        events.append(
            ("run_error", {"message": failure.message, "recoverable": failure.recoverable})
        )
        await self.recorder.ended(
            self.spec, ("failed", await self._usage_so_far(), failure.message), events
        )
