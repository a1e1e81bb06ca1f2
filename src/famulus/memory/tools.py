"""Agent tools: remember, recall, search_conversations, forget (the methods of ``MemoryTools``).

``forget`` deletes a memory for good, so it is a deferred tool that needs the
person's approval (pydantic-ai ``requires_approval``); the chat area turns
that into an ``approval_needed`` event.
"""

from __future__ import annotations

from pydantic_ai.toolsets import FunctionToolset

from famulus.agent import scope
from famulus.agent.outcome import failure
from famulus.agent.toolcache import per_owner
from famulus.errors import FamulusError, NotFound
from famulus.memory import recall as fusion
from famulus.memory import when
from famulus.memory.conversations import TOOL_LIMIT, ConversationIndex, format_hits
from famulus.memory.service import FACT_KINDS, MemoryService

# Provenance the agent may claim for what it remembers (never "manual" or
# "automation": those are set by the API and the automation runner).
_TOOL_SOURCES = ("chat", "mail", "calendar", "init")
# The same cap as POST /facts.
MAX_FACT_CHARS = 10_000


class MemoryTools:
    """The memory agent tools, one method each, over the memory service. The
    docstrings are what the model reads: the first line describes the tool,
    ``Args:`` its parameters."""

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory

    async def remember(
        self, text: str, kind: str = "fact", source: str = "chat", source_ref: str | None = None
    ) -> str:
        """Store a durable fact about the person (preference, plan, relationship...).

        Args:
            text: one self-contained statement, e.g. "Anna's birthday is 3 May".
            kind: fact, preference, event, relationship or instruction.
            source: where it was learned: chat (the person said it), mail, calendar or init.
            source_ref: optional pointer into the source, e.g. a mail uid or an event uid.
        """
        refusal = _remember_refusal(text)
        if refusal is not None:
            return failure(refusal)
        duplicate = await self.memory.find_duplicate(text)
        if duplicate is not None:
            scope.used("memory")
            return f"Already known as fact #{duplicate.id}: {duplicate.text}"
        origin = _origin(source)
        ref = source_ref[:200] if source_ref else _session_ref(origin)
        try:
            row = await self.memory.add_fact(text, _kind(kind), origin, ref)
        except FamulusError as exc:
            return failure(f"Not remembered: {exc.detail}")
        scope.used("memory")
        return f"Remembered as fact #{row.id}."

    async def recall(self, query: str, limit: int = fusion.LIMIT) -> str:
        """Search long-term memory for facts and patterns about a topic.

        Args:
            query: what to look for, in plain words.
            limit: how many facts at most (1-20).
        """
        if not query.strip():
            return "Recall needs a query: say in plain words what to look for."
        try:
            found = await self.memory.recall(query[:1000], limit=max(1, min(limit, 20)))
        except FamulusError as exc:
            return f"Recall failed: {exc.detail}"
        zone = self.memory.zone
        lines = [f"#{f.id} ({f.kind}, {when.label(f, zone)}): {f.text}" for f, _ in found.facts]
        lines += [f"observation #{o.id}: {o.summary}" for o, _ in found.observations]
        if lines:
            scope.used("memory")
        return "\n".join(lines) or "Nothing relevant in memory."

    async def search_conversations(
        self,
        query: str,
        session_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        speaker: str | None = None,
    ) -> str:
        """Search what was actually said in past conversations (not only remembered facts).

        Use it for "what did I tell you about ...", "what did you suggest last week".
        A time in the query ("in May", "last week") ranks messages said then, or
        naming a day then, first. The current conversation is left out unless
        session_id names it. Each result says when it was said.

        Args:
            query: what to look for, in plain words.
            session_id: only this session.
            since: only messages from this date or ISO datetime on, e.g. 2026-05-01.
            until: only messages up to this date (inclusive) or ISO datetime.
            speaker: only what "user" (the person) or "assistant" (you) said.
        """
        index: ConversationIndex | None = self.memory.conversations
        if index is None:
            return "Conversation search is not available."
        if not query.strip():
            return "search_conversations needs a query: say in plain words what to look for."
        current = scope.session_id()
        try:
            where = index.filter(
                session_id=session_id,
                since=since,
                until=until,
                speaker=speaker,
                exclude_session_id=current if current != session_id else None,
            )
            found = await index.search(query[:1000], where, TOOL_LIMIT)
        except FamulusError as exc:
            return failure(f"Search failed: {exc.detail}")
        if not found.hits:
            return "Nothing found in past conversations."
        scope.used("memory")
        return format_hits(found.hits, self.memory.zone, found.time_range)

    async def forget(self, fact_id: int) -> str:
        """Delete a fact from memory permanently (asks the person first).

        Args:
            fact_id: the id shown by recall, e.g. 12 for "#12".
        """
        try:
            await self.memory.delete_fact(fact_id)
        except NotFound:
            return f"There is no fact #{fact_id}."
        scope.used("memory")
        return f"Forgot fact #{fact_id}."


def _remember_refusal(text: str) -> str | None:
    """Why ``remember`` will not store ``text`` in this run, or None. A
    read-only automation may not write at all, so that comes first."""
    if scope.read_only():
        return scope.READ_ONLY_REFUSAL
    if not text.strip():
        return "Not remembered: the text is empty; write the fact as one sentence."
    if len(text) > MAX_FACT_CHARS:
        return f"Not remembered: a fact may hold at most {MAX_FACT_CHARS} characters."
    return None


def _kind(kind: str) -> str:
    """An unknown kind from the model is stored as a plain fact, not refused."""
    return kind if kind in FACT_KINDS else "fact"


def _origin(source: str) -> str:
    """The source type to record: one the agent may claim, else ``chat``; what
    an automation's run learns in its own chat is ``automation``."""
    origin = source if source in _TOOL_SOURCES else "chat"
    if origin == "chat" and scope.origin() == "automation":
        return "automation"
    return origin


def _session_ref(origin: str) -> str | None:
    """A fact learned in a conversation points at it (as extraction's do), so its
    provenance can name the session; other sources have no session to name."""
    return scope.session_id() if origin in ("chat", "automation") else None


@per_owner
def memory_toolsets(memory: MemoryService) -> list[FunctionToolset[None]]:
    """Recall (read-only, so the research sub-agent gets it too) and the writers;
    ``forget`` asks the person first."""
    tools = MemoryTools(memory)
    reading: FunctionToolset[None] = FunctionToolset(id="read-only:memory")
    writing: FunctionToolset[None] = FunctionToolset(id="memory")
    reading.add_function(tools.recall)
    reading.add_function(tools.search_conversations)
    writing.add_function(tools.remember)
    writing.add_function(tools.forget, requires_approval=True)
    return [reading, writing]
