"""TurnBuilder: what a turn needs before the model is asked — models, prompt, toolsets.

Both a run (``chat/run.py``) and the context report and compaction
(``chat/context.py``) assemble the agent the same way, so ``GET /context``
counts exactly what the next run would send. Keeping that assembly here, and
not in the run manager, lets both use it without calling back into each other.

Automatic compaction is reached through the ``Compactor`` port: the context
service implements it and is attached after both are built. The installed
skills (name and description) come from the ``SkillPrompts`` port and are
listed in the system prompt, so ``GET /context`` counts them too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from famulus.agent import scope
from famulus.agent.factory import AgentInputs, Prepared, prepare
from famulus.chat.ports import ChatMemory, Models
from famulus.chat.skills import SkillPrompts
from famulus.chat.spec import RunSpec
from famulus.core import Core
from famulus.errors import NotConfigured
from famulus.llm.types import ResolvedModel, Role

log = logging.getLogger(__name__)

AUTO_COMPACT_AT = 0.8  # share of the context window that triggers compaction before a run


class Compactor(Protocol):
    async def auto_compact(self, session_id: str, resolved: ResolvedModel, *, run_id: str) -> bool:
        """Fold older history into a summary; True when something was folded."""


class TurnBuilder:
    def __init__(
        self, core: Core, models: Models, memory: ChatMemory, skills: SkillPrompts | None = None
    ) -> None:
        self.c = core
        self.models = models
        self.memory = memory
        self.skills = skills
        self.compactor: Compactor | None = None
        # reported / estimated tokens of a session's last request (the usage
        # area's UsageService.context_scale); None: the estimate stands alone.
        self.context_scale: Callable[[str], Awaitable[float | None]] | None = None

    async def measure(self, session_id: str, prepared: Prepared, extra_text: str = "") -> int:
        """Tokens the next request would send: the estimate, scaled to what the
        provider reported for the session's last request when it reported it."""
        estimate = prepared.estimate_tokens(extra_text)
        scale = await self.context_scale(session_id) if self.context_scale else None
        return estimate if scale is None else round(estimate * scale)

    # -- models --------------------------------------------------------------

    async def resolve(self, role: Role) -> ResolvedModel:
        return await self.models.resolve(role)

    async def resolve_research(self) -> ResolvedModel:
        try:
            return await self.resolve("research")
        except NotConfigured:
            return await self.resolve("chat")

    # -- the agent -----------------------------------------------------------

    async def inputs(self) -> AgentInputs:
        return AgentInputs(
            directives=await self.c.directives.get(),
            timezone_setting=self.c.settings.timezone,
            memory=self.memory,
            directives_service=self.c.directives,
            resolve_research=self.resolve_research,
            extra_toolsets=await self.c.hooks.agent_toolsets(),
            skills=await self._skills(),
        )

    async def _skills(self) -> list[tuple[str, str]]:
        """The skills for the prompt, read from their folders off the event loop
        (a file read per skill); a failure leaves them out, never stops a chat."""
        if self.skills is None:
            return []
        try:
            return await asyncio.to_thread(self.skills.catalog)
        except Exception:
            log.exception("listing the skills failed; the prompt goes without them")
            return []

    async def prepared(
        self,
        session_id: str,
        resolved: ResolvedModel,
        *,
        query: str = "",
        leave_out_run: str | None = None,
    ) -> Prepared:
        """The agent over the session's history; ``leave_out_run``'s rows are not
        history (a run's own prompt is sent separately)."""
        session = await self.c.sessions.get(session_id)
        rows = await self.c.sessions.store.messages(session_id)
        if leave_out_run is not None:
            rows = [r for r in rows if r.run_id != leave_out_run]
        return await prepare(await self.inputs(), resolved, session, rows, query)

    async def for_run(self, spec: RunSpec) -> Prepared:
        """A run's agent; compacts first when the session nears the model's limit.
        Recall runs inside the run's scope: it knows whether the run may write."""
        with scope.running(spec.scope):
            prepared = await self._for_run(spec)
            limit = AUTO_COMPACT_AT * spec.resolved.context_window
            if (
                await self.measure(spec.session_id, prepared, spec.command) > limit
                and self.compactor is not None
                and await self.compactor.auto_compact(
                    spec.session_id, spec.resolved, run_id=spec.run_id
                )
            ):
                prepared = await self._for_run(spec)
        return prepared

    async def _for_run(self, spec: RunSpec) -> Prepared:
        return await self.prepared(
            spec.session_id, spec.resolved, query=spec.query, leave_out_run=spec.run_id
        )
