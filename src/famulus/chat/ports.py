"""What the chat area needs from other areas, as small ports.

The chat area drives runs; it does not import the llm or memory areas. It is
given objects with these shapes when ``wiring.py`` builds it
(``llm.service.LLMService`` and ``memory.facade.MemoryFacade``), and tests may
give it anything else with the same shape.
"""

from __future__ import annotations

from typing import Any, Protocol

from famulus.llm.types import ResolvedModel, Role


class Models(Protocol):
    async def resolve(self, role: Role) -> ResolvedModel: ...


class ChatMemory(Protocol):
    async def prompt_context(self, session_id: str, query: str) -> str: ...

    async def on_run_finished(
        self,
        session_id: str,
        run_id: str,
        *,
        read_only: bool = False,
        automation_id: int | None = None,
    ) -> None: ...

    async def record_learning_event(
        self,
        kind: str,
        summary: str,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None: ...
