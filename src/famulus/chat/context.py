"""Context accounting (GET /context) and compaction (POST /compact, automatic).

Token counts come from ``famulus.agent.tokens`` (a ~4 characters per token
estimate over exactly what the next request would send). Compaction writes a
``summary`` row that covers the older rows; the raw rows stay, and a failed
summary writes nothing.

A compaction that frees less than ``INEFFECTIVE_SHARE`` of what was in
context (the kept turns, the system prompt or the tools hold most of it) is
remembered for the session, and automatic compaction is skipped until there is
materially more to fold (``MATERIAL_SHARE`` of the window); otherwise every
turn near the limit would pay for a summary that changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from pydantic_ai.models.test import TestModel

from famulus.agent import compaction
from famulus.agent.factory import Prepared
from famulus.chat.turns import TurnBuilder
from famulus.core import Core
from famulus.errors import Conflict, NotConfigured, UpstreamError
from famulus.llm.types import ResolvedModel
from famulus.store.sessions import MessageRow
from famulus.usage.tag import tagged

log = logging.getLogger(__name__)

INEFFECTIVE_SHARE = 0.2  # a compaction freeing less than this share of the context
MATERIAL_SHARE = 0.1  # ... is retried once the rows to fold hold this share of the window

_NOTHING = f"Only the last {compaction.KEEP_USER_TURNS} turns are in context; nothing to compact."
_SKIPPED = "The last compaction freed little and there is not much more to fold yet."


# Stands in for the chat model when none is configured, so the prompt, tools
# and history can still be measured; it is never asked for anything.
_NO_MODEL = ResolvedModel(
    model_id="", provider="test", model=TestModel(), context_window=0, max_output_tokens=0
)


@dataclass(frozen=True)
class ContextReport:
    model: str | None
    limit: int | None
    total: int
    message_count: int
    tool_count: int


@dataclass(frozen=True)
class CompactResult:
    status: str
    message: str
    before_tokens: int
    after_tokens: int


class ContextService:
    """``busy(session_id)``: a run in the session still takes messages, so
    compacting now would fold history under its feet."""

    def __init__(self, core: Core, turns: TurnBuilder, busy: Callable[[str], bool]) -> None:
        self.c = core
        self.turns = turns
        self.busy = busy
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        # Sessions whose last compaction freed too little (in memory: after a
        # restart the next automatic compaction simply runs once more).
        self._ineffective: set[str] = set()

    async def _prepared(self, session_id: str, resolved: ResolvedModel) -> Prepared:
        return await self.turns.prepared(session_id, resolved)

    async def report(self, session_id: str | None) -> ContextReport:
        """Without a chat model the usage is still measured; model and limit are null."""
        session = await self.c.sessions.current(session_id)
        try:
            resolved: ResolvedModel | None = await self.turns.resolve("chat")
        except NotConfigured:
            resolved = None
        prepared = await self._prepared(session.session_id, resolved or _NO_MODEL)
        return ContextReport(
            model=resolved.model_id if resolved else None,
            limit=resolved.context_window if resolved else None,
            total=await self.turns.measure(session.session_id, prepared),
            message_count=len(prepared.conversation.rows),
            tool_count=len(prepared.tool_definitions()),
        )

    async def compact(self, session_id: str | None) -> CompactResult:
        session = await self.c.sessions.current(session_id)
        if self.busy(session.session_id):
            raise Conflict(
                "A run is active in this session; compact after it finishes or cancel it."
            )
        try:
            resolved = await self.turns.resolve("chat")
        except NotConfigured:
            # Nothing to fold needs no model; otherwise the summary does.
            result = await self._nothing_to_compact(session.session_id)
            if result is None:
                raise
            return result
        try:
            return await self._compact(session.session_id, resolved, run_id=None)
        except (Conflict, UpstreamError):
            raise
        except Exception as exc:
            log.warning("compaction failed: %s", exc)
            raise UpstreamError(
                "The chat model could not summarize the conversation, so nothing was changed: "
                + compaction.why_failed(exc, resolved)
            ) from exc

    async def _nothing_to_compact(self, session_id: str) -> CompactResult | None:
        prepared = await self._prepared(session_id, _NO_MODEL)
        if compaction.rows_to_fold(prepared.conversation):
            return None
        tokens = await self.turns.measure(session_id, prepared)
        return CompactResult("nothing_to_compact", _NOTHING, tokens, tokens)

    async def auto_compact(self, session_id: str, resolved: ResolvedModel, *, run_id: str) -> bool:
        """Called by a run near the limit; failure leaves history as it was."""
        try:
            result = await self._compact(session_id, resolved, run_id=run_id, auto=True)
        except Exception as exc:
            log.warning("automatic compaction failed; continuing uncompacted: %s", exc)
            return False
        return result.status == "compacted"

    def _not_worth_it(
        self, session_id: str, resolved: ResolvedModel, fold: list[MessageRow]
    ) -> bool:
        """After an ineffective compaction, wait until there is materially more to fold."""
        if session_id not in self._ineffective:
            return False
        return compaction.fold_tokens(fold) < MATERIAL_SHARE * resolved.context_window

    def _remember_effect(self, session_id: str, before_tokens: int, after_tokens: int) -> None:
        if before_tokens - after_tokens < INEFFECTIVE_SHARE * before_tokens:
            log.info(
                "compaction of session %s freed little (%d -> %d tokens); automatic"
                " compaction waits until there is more to fold",
                session_id,
                before_tokens,
                after_tokens,
            )
            self._ineffective.add(session_id)
        else:
            self._ineffective.discard(session_id)

    async def _compact(
        self, session_id: str, resolved: ResolvedModel, *, run_id: str | None, auto: bool = False
    ) -> CompactResult:
        async with self._locks[session_id]:
            before = await self._prepared(session_id, resolved)
            before_tokens = await self.turns.measure(session_id, before)
            fold = compaction.rows_to_fold(before.conversation)
            if not fold:
                return CompactResult("nothing_to_compact", _NOTHING, before_tokens, before_tokens)
            if auto and self._not_worth_it(session_id, resolved, fold):
                return CompactResult("skipped", _SKIPPED, before_tokens, before_tokens)
            with tagged(session_id=session_id, run_id=run_id):
                summary = await compaction.summarize(resolved, before.conversation.summary, fold)
            await self.c.sessions.store.add_message(
                session_id,
                "summary",
                summary,
                run_id=run_id,
                meta={
                    "through_id": fold[-1].id,
                    "folded": len(fold),
                    "before_tokens": before_tokens,
                },
            )
            after = await self._prepared(session_id, resolved)
            after_tokens = await self.turns.measure(session_id, after)
            self._remember_effect(session_id, before_tokens, after_tokens)
            fields = {"run_id": run_id} if run_id else {}
            await self.c.events.publish(
                session_id,
                "compacted",
                before_tokens=before_tokens,
                after_tokens=after_tokens,
                **fields,
            )
            return CompactResult(
                "compacted",
                f"Summarized {len(fold)} older messages; the last {compaction.KEEP_USER_TURNS} turns are kept verbatim.",
                before_tokens,
                after_tokens,
            )
