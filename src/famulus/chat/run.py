"""One agent run in one session: drives the agent and reports what happens.

The run is the agent's ``EventSink``: each report becomes a persisted session
event and, for the main agent, a history row written the moment the message
is complete (the user message is written at submit, so a crash loses at most
the message being generated). A backgrounded run keeps going but its progress
events are replaced by ``background_task`` events.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.run import AgentRun
from pydantic_ai.usage import RunUsage

from famulus.agent import scope
from famulus.agent.driver import drive, result_text
from famulus.agent.factory import RUN_LIMITS
from famulus.agent.failures import describe
from famulus.agent.scope import RunScope
from famulus.agent.secret_args import public_args
from famulus.agent.sink import AgentDeps, Decision
from famulus.chat.queue import QueuedMessage
from famulus.llm.types import ResolvedModel
from famulus.store.runs import RunUsageRow

if TYPE_CHECKING:
    from famulus.chat.manager import RunManager

log = logging.getLogger(__name__)

# Progress a backgrounded run no longer interleaves into the foreground transcript.
PROGRESS_EVENTS = frozenset(
    {"thinking", "reasoning", "text_delta", "text", "tool_call", "tool_result"}
)
COMMAND_CHARS = 200
SHUTDOWN_MESSAGE = (
    "The server stopped while this run was in progress; what was said before is kept."
)


def usage_row(usage: RunUsage, model: ResolvedModel) -> RunUsageRow:
    cost = 0.0
    if model.input_price_per_mtok:
        cost += usage.input_tokens * model.input_price_per_mtok / 1e6
    if model.output_price_per_mtok:
        cost += usage.output_tokens * model.output_price_per_mtok / 1e6
    return RunUsageRow(
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, round(cost, 6)
    )


class Run:
    def __init__(
        self,
        manager: RunManager,
        *,
        run_id: str,
        session_id: str,
        session_name: str,
        resolved: ResolvedModel,
        prompt: Any,
        skip_approvals: bool,
        command: str,
        run_scope: RunScope | None = None,
    ) -> None:
        self.manager = manager
        self.id = run_id
        self.session_id = session_id
        self.session_name = session_name
        self.resolved = resolved
        self.prompt = prompt
        self.skip_approvals = skip_approvals
        self.command = command[:COMMAND_CHARS]
        self.scope = run_scope or RunScope()
        self.backgrounded = False
        self.accepting = True  # False once the agent loop ended: new messages start a new run
        self.shutdown = False
        self.ending = False  # recording its end: a further cancel would cut that short
        self.task: asyncio.Task[None] | None = None
        self.usage = RunUsage()
        self._agent_run: AgentRun[AgentDeps, str] | None = None
        self._early: list[QueuedMessage] = []
        self._queued: dict[str, QueuedMessage] = {}
        self.approvals: dict[str, asyncio.Future[Decision]] = {}
        self.deps: AgentDeps | None = None

    # -- EventSink -----------------------------------------------------------

    async def emit(self, type_: str, /, **fields: Any) -> None:
        if self.backgrounded and type_ in PROGRESS_EVENTS:
            return
        await self.manager.events.publish(self.session_id, type_, run_id=self.id, **fields)

    def emit_live(self, type_: str, /, **fields: Any) -> None:
        if not self.backgrounded:
            self.manager.events.publish_live(self.session_id, type_, run_id=self.id, **fields)

    async def response_complete(self, response: ModelResponse) -> None:
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        calls = [
            {"id": p.tool_call_id, "name": p.tool_name, "arguments": public_args(p.args_as_dict())}
            for p in response.parts
            if isinstance(p, ToolCallPart)
        ]
        if text or calls:
            await self.manager.history.add_message(
                self.session_id, "assistant", text, run_id=self.id, tool_calls=calls or None
            )

    async def tool_returned(self, part: ToolReturnPart, *, error: bool) -> None:
        text = result_text(part)
        await self.manager.history.add_message(
            self.session_id,
            "tool",
            text,
            run_id=self.id,
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            meta={"error": True} if error else None,
        )
        await self._record_sources()
        if error:
            await self.manager.learning_event(
                "tool_failed",
                f"Tool {part.tool_name} failed: {text[:200]}",
                self,
                {"tool": part.tool_name},
            )

    async def _record_sources(self) -> None:
        """Sources the run's tools (and sub-agents) reported using successfully."""
        for source in self.scope.take_sources():
            await self.manager.c.sessions.add_source(self.session_id, source)

    async def ingested(self, enqueue_id: str, messages: tuple[ModelMessage, ...]) -> None:
        queued = self._queued.pop(enqueue_id, None)
        if queued is None:
            return
        await self._to_history(queued, None)
        await self.emit("message_ingested", client_id=queued.client_id)

    async def decide(
        self, tool_id: str, name: str, args: dict[str, Any], description: str
    ) -> Decision:
        if self.scope.read_only:
            # Nobody is asked, so nobody declined: no approval event, no learning event.
            return Decision(False, refusal=scope.READ_ONLY_REFUSAL)
        if self.skip_approvals:
            return Decision(True)
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.approvals[tool_id] = future
        try:
            await self.emit(
                "approval_needed", tool_id=tool_id, name=name, args=args, description=description
            )
            decision = await future
        finally:
            self.approvals.pop(tool_id, None)
        if not decision.approved:
            await self.manager.learning_event(
                "approval_denied",
                f"The person declined {name}.",
                self,
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

    async def main(self) -> None:
        try:
            await self._execute()
        except asyncio.CancelledError:
            await self._stopped()
        except Exception as exc:  # every failure becomes a run_error event
            await self._failed(exc)
        finally:
            self.accepting = False
            self.manager.run_done(self)

    async def _execute(self) -> None:
        await self.emit(
            "run_started",
            session_id=self.session_id,
            session_name=self.session_name,
            skip_approvals=self.skip_approvals,
        )
        with scope.running(self.scope):  # recall knows whether the run may write
            prepared = await self.manager.prepare(self)
        self.deps = AgentDeps(
            sink=self,
            session_id=self.session_id,
            run_id=self.id,
            timezone=prepared.timezone,
            descriptions=prepared.descriptions,
        )
        with scope.running(self.scope):
            result = await drive(
                prepared.agent,
                prompt=self.prompt,
                history=prepared.history,
                deps=self.deps,
                limits=RUN_LIMITS,
                descriptions=prepared.descriptions,
                on_start=self._attach,
            )
        await self._record_sources()
        self.accepting = False
        self.usage = result.usage
        usage = usage_row(result.usage, self.resolved)
        await self.manager.runs.finish(self.id, "finished", usage)
        if self.backgrounded:
            await self.emit(
                "background_task", task_id=self.id, command=self.command, status="completed"
            )
            await self.manager.events.publish(
                self.session_id, "text", run_id=self.id, content=result.output, depth=0
            )
        await self.emit("run_finished", usage=usage.__dict__)
        await self.manager.after_finish(self)

    async def _save_partial(self) -> str:
        """Keep the text streamed so far and the queued messages never taken in."""
        await self._record_sources()
        partial = "".join(self.deps.partial_text) if self.deps else ""
        if partial:
            await self.manager.history.add_message(
                self.session_id, "assistant", partial, run_id=self.id, meta={"interrupted": True}
            )
        for message in self.undelivered():
            await self._to_history(message, {"unanswered": True})
        return partial

    async def _to_history(self, message: QueuedMessage, meta: dict[str, Any] | None) -> None:
        if message.pending_id is not None:
            await self.manager.pending.to_history(message.pending_id, meta)
        else:
            await self.manager.history.add_message(
                self.session_id,
                "user",
                message.text,
                run_id=self.id,
                images=message.images,
                meta=meta,
            )

    async def _background_ended(self, status: str, partial: str) -> None:
        """A backgrounded run's end, with what it said so far delivered like a result."""
        await self.emit("background_task", task_id=self.id, command=self.command, status=status)
        if partial:
            await self.manager.events.publish(
                self.session_id, "text", run_id=self.id, content=partial, depth=0
            )

    def _usage_so_far(self) -> RunUsageRow:
        usage = self._agent_run.usage if self._agent_run is not None else self.usage
        return usage_row(usage, self.resolved)

    async def _stopped(self) -> None:
        self.ending = True
        self.accepting = False
        partial = await self._save_partial()
        usage = self._usage_so_far()
        if self.shutdown:
            await self.manager.runs.finish(self.id, "interrupted", usage, SHUTDOWN_MESSAGE)
            if self.backgrounded:
                await self._background_ended("failed", partial)
            await self.emit("run_error", message=SHUTDOWN_MESSAGE, recoverable=False)
            return
        await self.manager.runs.finish(self.id, "cancelled", usage)
        if self.backgrounded:
            await self._background_ended("cancelled", partial)
        await self.emit("run_cancelled")

    async def _failed(self, exc: Exception) -> None:
        failure = describe(exc, self.resolved)
        # Provider failures are expected and already explained to the client; a
        # stack trace only helps when something of ours broke.
        expected = isinstance(exc, ModelAPIError | UnexpectedModelBehavior | UsageLimitExceeded)
        log.warning(
            "run %s failed: %s", self.id, failure.message, exc_info=None if expected else exc
        )
        log.debug("run %s failure detail", self.id, exc_info=exc)
        self.ending = True
        self.accepting = False
        partial = await self._save_partial()
        await self.manager.runs.finish(self.id, "failed", self._usage_so_far(), failure.message)
        if self.backgrounded:
            await self._background_ended("failed", partial)
        await self.emit("run_error", message=failure.message, recoverable=failure.recoverable)
