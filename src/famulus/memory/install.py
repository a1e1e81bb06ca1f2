"""Wires the memory area: the service other areas call, its routers and timers.

``container.extras["memory"]`` is a ``MemoryFacade``: the small interface the
chat, agent and config areas use (prompt context, tools, run hooks, learning
events, embedding status), over the full ``MemoryService``.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI
from pydantic_ai.toolsets import AbstractToolset

from famulus.api.deps import require_key
from famulus.container import Container
from famulus.memory import context, reindex
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


def install(app: FastAPI, container: Container) -> None:
    from famulus.api import embedding, memory_admin, memory_facts, memory_learning, memory_profile

    settings = container.settings
    service = MemoryService(
        container.db,
        container.kv,
        lambda: container.extras.get("llm"),
        budget_chars=settings.memory_budget_chars,
    )
    jobs = MemoryJobs(
        service,
        container.sessions,
        quiet_s=settings.memory_quiet_s,
        after_messages=settings.memory_extract_after_messages,
    )
    learning = Learning(service, container.directives)
    service.jobs, service.learning = jobs, learning
    container.extras["memory"] = MemoryFacade(service, jobs, learning)

    async def stop() -> None:
        await jobs.stop()
        await reindex.stop_reindex(service)
        await service.stop()

    container.on_start(service.start)
    container.on_start(jobs.resume)
    container.on_stop(stop)
    for module in (memory_facts, memory_profile, memory_learning, memory_admin, embedding):
        app.include_router(module.router, dependencies=[Depends(require_key)])
