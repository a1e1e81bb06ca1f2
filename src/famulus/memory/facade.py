"""The memory area's face to the rest of famulus.

``MemoryFacade`` is the small interface the chat, agent, automations and config
areas use (prompt context, tools, run hooks, learning events, embedding
status), over the full ``MemoryService``; the memory routers use the service.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.toolsets import AbstractToolset

from famulus.memory import context
from famulus.memory.jobs import MemoryJobs
from famulus.memory.learning import Learning
from famulus.memory.service import MemoryService
from famulus.memory.tools import memory_toolsets


class MemoryFacade:
    """What other areas may call; everything else stays inside memory."""

    def __init__(self, service: MemoryService, jobs: MemoryJobs, learning: Learning) -> None:
        self.service = service
        self.jobs = jobs
        self.learning = learning

    def current_embedding_model(self) -> str:
        return self.service.current_embedding_model()

    def connected(self) -> bool:
        return self.service.connected()

    async def prompt_context(self, session_id: str, query: str) -> str:
        return await context.prompt_context(self.service, session_id, query)

    async def toolsets(self) -> list[AbstractToolset[Any]]:
        """None while memory is switched off (``memory_enabled: false``)."""
        if not await self.service.enabled():
            return []
        return list(memory_toolsets(self.service))

    async def on_run_finished(
        self,
        session_id: str,
        run_id: str,
        *,
        read_only: bool = False,
        automation_id: int | None = None,
    ) -> None:
        if self.service.conversations is not None:
            self.service.conversations.nudge()  # index the run's messages, off the request path
        await self.jobs.on_run_finished(
            session_id, run_id, read_only=read_only, automation_id=automation_id
        )

    async def record_learning_event(
        self,
        kind: str,
        summary: str,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        await self.learning.record(
            kind, summary, session_id=session_id, run_id=run_id, data=data or {}
        )
