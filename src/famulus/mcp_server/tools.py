"""The MCP tools famulus offers, as calls on its services (never HTTP).

Another agent or an IDE that connects to famulus over MCP acts for the person,
like the web client does: it may search and add to the person's memory, talk
to the person's agent in a session and read its answer, and list and run the
person's automations. Each tool is a method of ``FamulusTools`` over the
services ``wiring.py`` built; ``build_server`` turns them into an ``MCPServer``
(the ``mcp`` package builds each tool's input and output schema from the
signature and the return model). ``api/mcp.py`` serves it at ``/mcp``.

Errors: a famulus error (unknown session, no model connected …) becomes an
MCP tool error carrying its ``detail``; the ``mcp`` package turns anything
unexpected into a generic tool error and logs the traceback, so no traceback
ever reaches the caller.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from famulus import __version__
from famulus.automations.service import AutomationService
from famulus.chat.follow import ask
from famulus.chat.manager import ChatInput, RunManager
from famulus.errors import FamulusError
from famulus.events import EventHub
from famulus.memory.service import MemoryService
from famulus.sessions.service import SessionService
from famulus.store.automations import AutomationRow
from famulus.store.sessions import SessionRow

# What a fact added over MCP records as its source (``GET /facts?source_type=mcp``).
SOURCE_TYPE = "mcp"
# The same caps as the HTTP API: POST /facts, POST /chat/message.
MAX_FACT_CHARS = 10_000
MAX_MESSAGE_CHARS = 100_000
# How long chat and run_automation wait for an answer: below the 300 s most MCP
# clients wait for a tool call. A chat run still going then is cancelled (as
# chat/follow.py ``ask`` does); an automation goes on and is reported running.
WAIT_S = 240.0
# The reason an approval request is refused with when the caller did not opt in.
NO_APPROVALS = (
    "This action needs the person's approval, which cannot be given over MCP. "
    "Do without it, or tell the person to approve it in the famulus web client "
    "(or to repeat the request through MCP with skip_approvals)."
)
INSTRUCTIONS = (
    "famulus is the person's own AI agent server. Use recall before asking the "
    "person something they may have told famulus already, remember for durable "
    "facts about them, chat to hand a task to their agent (it has their memory "
    "and connected tools), and list_automations/run_automation for their "
    "scheduled tasks."
)

Limit = Annotated[int, Field(ge=1, le=20, description="At most this many (1-20).")]
T = TypeVar("T")
SessionId = Annotated[str, Field(min_length=1, max_length=200)]


class RecalledFact(BaseModel):
    id: int
    text: str
    kind: str
    source_type: str
    created_at: str


class RecalledObservation(BaseModel):
    id: int
    summary: str


class Recall(BaseModel):
    """What memory holds about the query, best match first."""

    facts: list[RecalledFact]
    observations: list[RecalledObservation]


class Remembered(BaseModel):
    status: str = Field(description="remembered, or duplicate when an active fact says the same")
    fact_id: int
    text: str


class SessionItem(BaseModel):
    session_id: str
    name: str
    last_activity: str
    message_count: int


class Sessions(BaseModel):
    sessions: list[SessionItem]


class HistoryMessage(BaseModel):
    id: int
    role: str
    content: str
    created_at: str


class History(BaseModel):
    session_id: str
    name: str
    messages: list[HistoryMessage]


class ChatAnswer(BaseModel):
    session_id: str
    run_id: str
    status: str = Field(description="ok: the agent answered")
    text: str = Field(description="The agent's answer")


class AutomationItem(BaseModel):
    id: int
    name: str
    description: str
    trigger: dict[str, Any]
    enabled: bool
    writable: bool
    running: bool
    last_run_at: str | None
    last_status: str | None
    last_result: str | None
    next_run_at: str | None


class Automations(BaseModel):
    automations: list[AutomationItem]


class AutomationOutcome(BaseModel):
    automation_id: int
    run_id: int = Field(description="The run's id, as in GET /automations/{id} runs")
    status: str = Field(description="ok, error, cancelled, or running if it outlasted the wait")
    result: str | None


class FamulusTools:
    """One method per MCP tool, over famulus's services. ``wait_s`` bounds how
    long ``chat`` and ``run_automation`` wait for an answer."""

    def __init__(
        self,
        memory: MemoryService,
        sessions: SessionService,
        events: EventHub,
        chat: RunManager,
        automations: AutomationService,
        wait_s: float = WAIT_S,
    ) -> None:
        self.memory = memory
        self.sessions = sessions
        self.events = events
        self.chat_runs = chat
        self.automations = automations
        self.wait_s = wait_s

    async def recall(
        self,
        query: Annotated[str, Field(min_length=1, max_length=1000)],
        limit: Limit = 8,
    ) -> Recall:
        """Search the person's long-term memory (facts and observations) for a topic,
        in plain words; hybrid full-text and semantic search, best match first."""
        if not query.strip():
            raise ToolError("The query is blank; say in plain words what to look for.")
        found = await _famulus(self.memory.recall(query, limit=limit))
        return Recall(
            facts=[RecalledFact.model_validate(f, from_attributes=True) for f, _ in found.facts],
            observations=[
                RecalledObservation.model_validate(o, from_attributes=True)
                for o, _ in found.observations
            ],
        )

    async def remember(
        self,
        text: Annotated[str, Field(min_length=1, max_length=MAX_FACT_CHARS)],
        kind: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]*$", max_length=40)] = "fact",
    ) -> Remembered:
        """Store one durable, self-contained fact about the person in famulus's memory,
        e.g. "Anna's birthday is 3 May". kind: fact, preference, event, relationship,
        instruction … A fact famulus already holds is not stored twice."""
        if not text.strip():
            raise ToolError("The text is blank; write the fact as one sentence.")
        duplicate = await _famulus(self.memory.find_duplicate(text))
        if duplicate is not None:
            return Remembered(status="duplicate", fact_id=duplicate.id, text=duplicate.text)
        row = await _famulus(self.memory.add_fact(text, kind, SOURCE_TYPE))
        return Remembered(status="remembered", fact_id=row.id, text=row.text)

    async def list_sessions(self, limit: Limit = 20) -> Sessions:
        """The person's active chat sessions, most recently active first."""
        rows = await _famulus(self.sessions.recent(limit=limit))
        return Sessions(sessions=[_session(r) for r in rows])

    async def create_session(
        self, name: Annotated[str, Field(min_length=1, max_length=200)] = "New session"
    ) -> SessionItem:
        """Start a new chat session (for example one per task), to pass to chat."""
        if not name.strip() or not name.isprintable():
            raise ToolError("The name must be one line of text, not blank.")
        return _session(await _famulus(self.sessions.create(name)))

    async def session_history(
        self, session_id: SessionId | None = None, limit: Limit = 20
    ) -> History:
        """The latest messages of a session (default: the most recently active chat
        session), oldest first."""
        row, messages = await _famulus(self.sessions.history(session_id))
        shown = [m for m in messages if m.role in ("user", "assistant") and m.content][-limit:]
        return History(
            session_id=row.session_id,
            name=row.name,
            messages=[HistoryMessage.model_validate(m, from_attributes=True) for m in shown],
        )

    async def chat(
        self,
        message: Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS)],
        session_id: SessionId | None = None,
        skip_approvals: bool = False,
    ) -> ChatAnswer:
        """Send a message to the person's famulus agent and wait for its answer. It
        has the person's memory and connected tools (web, mail, calendar, skills).
        session_id: default the most recently active chat session (list_sessions,
        create_session). Actions that need the person's approval are refused
        unless skip_approvals is true."""
        session = await _famulus(self.sessions.current(session_id))
        inp = ChatInput(
            message,
            session.session_id,
            skip_approvals=skip_approvals,
            approval_refusal=None if skip_approvals else NO_APPROVALS,
        )
        run_id, answer = await _famulus(ask(self.events, self.chat_runs, inp, self.wait_s))
        if answer.status != "ok":
            reason = answer.error or f"The run ended: {answer.status}."
            raise ToolError(f"{reason} (run {run_id} in session {session.session_id})")
        return ChatAnswer(
            session_id=session.session_id, run_id=run_id, status=answer.status, text=answer.text
        )

    async def list_automations(self) -> Automations:
        """The person's automations (scheduled or calendar-triggered agent tasks)
        with their last outcome."""
        rows = await _famulus(self.automations.all())
        return Automations(automations=[self._automation(r) for r in rows])

    async def run_automation(
        self, automation_id: Annotated[int, Field(ge=1, le=2**63 - 1)]
    ) -> AutomationOutcome:
        """Run an automation now and wait for its outcome (status and result); one
        that takes longer is reported as running and goes on."""
        run_id = await _famulus(self.automations.run_now(automation_id))
        run = await _famulus(self.automations.wait_run(automation_id, run_id, self.wait_s))
        return AutomationOutcome(
            automation_id=automation_id,
            run_id=run_id,
            status=run.status if run is not None else "running",
            result=run.result if run is not None else None,
        )

    def _automation(self, row: AutomationRow) -> AutomationItem:
        fields = {
            name: getattr(row, name) for name in AutomationItem.model_fields if name != "running"
        }
        return AutomationItem(**fields, running=self.automations.is_running(row.id))


async def _famulus(call: Awaitable[T]) -> T:
    """Await a service call; a famulus error becomes an MCP tool error with its detail."""
    try:
        return await call
    except FamulusError as exc:
        raise ToolError(exc.detail) from None


def _session(row: SessionRow) -> SessionItem:
    return SessionItem.model_validate(row, from_attributes=True)


_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
# The agent may reach the web, mail and calendar, and change things when allowed.
_AGENT = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)


def build_server(tools: FamulusTools) -> MCPServer[Any]:
    """The MCP server object with every famulus tool registered."""
    server: MCPServer[Any] = _keeping_logging(
        lambda: MCPServer(
            "famulus", title="famulus", version=__version__, instructions=INSTRUCTIONS
        )
    )
    for fn, hints in (
        (tools.recall, _READ),
        (tools.remember, _WRITE),
        (tools.list_sessions, _READ),
        (tools.create_session, _WRITE),
        (tools.session_history, _READ),
        (tools.chat, _AGENT),
        (tools.list_automations, _READ),
        (tools.run_automation, _AGENT),
    ):
        description = inspect.cleandoc(fn.__doc__ or "")
        server.add_tool(fn, description=description, annotations=hints, structured_output=True)
    return server


def _keeping_logging(make: Callable[[], T]) -> T:
    """``MCPServer()`` calls ``logging.basicConfig`` (a rich handler at INFO on the
    root logger when it has none); famulus's logging is ``logs.py``'s alone, so
    whatever the constructor adds to the root logger is taken off again."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return make()
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
