"""RunRecorder: where everything a run reports is kept.

A run reports events (persisted, then fanned out by the event hub), history
rows, the sources its tools used, its end in the run log, and feedback for
memory. This object holds the stores and services those go to, so the run
itself needs nothing but its spec, this recorder and the turn builder — and
never the run manager.
"""

from __future__ import annotations

import logging
from typing import Any

from famulus.chat.ports import ChatMemory
from famulus.chat.queue import QueuedMessage
from famulus.chat.spec import RunSpec
from famulus.core import Core
from famulus.store.pending import PendingStore
from famulus.store.runs import RunStore, RunUsageRow

log = logging.getLogger(__name__)


class RunRecorder:
    def __init__(self, core: Core, memory: ChatMemory) -> None:
        self.c = core
        self.memory = memory
        self.events = core.events
        self.sessions = core.sessions
        self.history = core.sessions.store
        self.runs = RunStore(core.db)
        self.pending = PendingStore(core.db)

    # -- events --------------------------------------------------------------

    async def event(self, spec: RunSpec, type_: str, /, **fields: Any) -> None:
        await self.events.publish(spec.session_id, type_, run_id=spec.run_id, **fields)

    def live(self, spec: RunSpec, type_: str, /, **fields: Any) -> None:
        self.events.publish_live(spec.session_id, type_, run_id=spec.run_id, **fields)

    # -- history -------------------------------------------------------------

    async def message(self, spec: RunSpec, role: str, text: str, **fields: Any) -> None:
        await self.history.add_message(spec.session_id, role, text, run_id=spec.run_id, **fields)

    async def queued_to_history(
        self, spec: RunSpec, message: QueuedMessage, meta: dict[str, Any] | None
    ) -> None:
        """A queued message reaches history: its pending row moves in one transaction."""
        if message.pending_id is not None:
            await self.pending.to_history(message.pending_id, meta)
        else:
            await self.message(spec, "user", message.text, images=message.images, meta=meta)

    async def sources(self, spec: RunSpec) -> None:
        """Sources the run's tools (and sub-agents) reported using successfully."""
        for source in spec.scope.take_sources():
            await self.sessions.add_source(spec.session_id, source)

    # -- the run log ---------------------------------------------------------

    async def started(
        self,
        spec: RunSpec,
        message: str,
        images: list[dict[str, str]] | None,
        client_id: str | None = None,
    ) -> None:
        """The person's message, the run's row and ``run_started``: one transaction,
        so the event is out after a single trip to the writer. The message keeps
        its ``client_id`` (a queued message re-sent as a new run's first one is
        then known as taken in, see ``chat/queue.py``)."""
        meta = {"client_id": client_id} if client_id else None
        ops = [
            self.history.message_op(
                spec.session_id, "user", message, run_id=spec.run_id, images=images, meta=meta
            ),
            self.runs.create_op(
                spec.run_id,
                spec.session_id,
                model_id=spec.resolved.model_id,
                skip_approvals=spec.skip_approvals,
            ),
        ]
        await self.events.publish_with(
            ops,
            spec.session_id,
            "run_started",
            run_id=spec.run_id,
            session_id=spec.session_id,
            session_name=spec.session_name,
            skip_approvals=spec.skip_approvals,
            **({"client_id": client_id} if client_id else {}),
        )

    async def ended(
        self,
        spec: RunSpec,
        outcome: tuple[str, RunUsageRow, str | None],
        events: list[tuple[str, dict[str, Any]]],
    ) -> None:
        """The run's end (status, usage, error) in the run log together with the
        first event that reports it, then the other events in order."""
        status, usage, error = outcome
        (first, fields), *rest = events
        finish = self.runs.finish_op(spec.run_id, status, usage, error)
        await self.events.publish_with(
            [finish], spec.session_id, first, run_id=spec.run_id, **fields
        )
        for type_, more in rest:
            await self.event(spec, type_, **more)

    # -- memory --------------------------------------------------------------

    async def learning_event(
        self, spec: RunSpec, kind: str, summary: str, data: dict[str, Any]
    ) -> None:
        """Feedback for continual learning; a read-only automation's run gives none
        (it may change nothing, memory included)."""
        if spec.scope.read_only:
            return
        try:
            await self.memory.record_learning_event(
                kind, summary, session_id=spec.session_id, run_id=spec.run_id, data=data
            )
        except Exception:
            log.exception("memory.record_learning_event failed")

    async def memory_after_run(self, spec: RunSpec) -> None:
        """Memory learns from the finished run; its failure never fails the run."""
        try:
            await self.memory.on_run_finished(
                spec.session_id,
                spec.run_id,
                read_only=spec.scope.read_only,
                automation_id=spec.scope.automation_id,
            )
        except Exception:
            log.exception("memory.on_run_finished failed")
