"""Automation rules: CRUD, toggles, the scheduler loop and one run at a time.

The scheduler wakes every few seconds and starts every enabled automation whose
``next_run_at`` has passed, so a run missed while the server was down happens
once at start-up (not once per missed slot). A per-automation lock guarantees
two runs of one automation never overlap. A disabled automation has no
``next_run_at``; enabling it computes the next slot from now. A one-shot
(``once``) automation is switched off the moment the scheduler starts it.
Each run records what started it (``fired_by``): the schedule, a catch-up of
a slot missed while the server was down, a calendar event, or a person.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from famulus.agent.clock import zone_name
from famulus.automations import runner
from famulus.automations.triggers import is_once, next_fire, validate_trigger
from famulus.chat.manager import RunManager
from famulus.chat.ports import ChatMemory
from famulus.core import Core
from famulus.errors import Conflict, FamulusError, InvalidRequest, NotFound
from famulus.feed import Feed
from famulus.notify.delivery import DeliveryQueue
from famulus.notify.service import NotifierService
from famulus.sessions.service import AUTOMATION
from famulus.store.automations import AutomationRow, AutomationRunRow, AutomationStore
from famulus.store.deliveries import DELIVERED, DeliveryRow
from famulus.timeutil import iso, now_iso, parse_iso, utcnow

log = logging.getLogger(__name__)
TICK_S = 5.0
# How long deleting an automation waits for its run to wind down.
CANCEL_WAIT_S = 10.0
# What started a run (``fired_by`` in the run history).
SCHEDULE, CATCH_UP, CALENDAR, MANUAL = "schedule", "catch_up", "calendar", "manual"
# A reminder's run sends its description as it is; a task's run asks the agent.
TASK, REMINDER = "task", "reminder"


class AutomationService:
    def __init__(
        self,
        c: Core,
        store: AutomationStore,
        chat: RunManager,
        notifiers: NotifierService,
        deliveries: DeliveryQueue,
        memory: ChatMemory,
    ) -> None:
        self.c = c
        self.store = store
        self.chat = chat
        self.notifiers = notifiers
        self.deliveries = deliveries
        self.memory = memory
        self.zone = ZoneInfo(zone_name(c.settings.timezone))
        self.running: dict[int, asyncio.Task[None]] = {}
        # Automations between "decided to run" and "task registered".
        self._starting: set[int] = set()
        self.feed = Feed()  # what GET /automations/events streams
        self._loop: asyncio.Task[None] | None = None
        # Slots due before this moment were missed while the server was down.
        self.started_at = utcnow()

    # -- CRUD ----------------------------------------------------------------

    async def create(self, fields: dict[str, Any]) -> AutomationRow:
        now = utcnow()
        fields["trigger"] = validate_trigger(fields["trigger"], self.zone, now)
        await self._check_notifiers(fields.get("notifiers") or [])
        enabled = fields.get("enabled", True)
        fields["next_run_at"] = self._next(fields["trigger"], now) if enabled else None
        fields["enabled_at"] = iso(now) if enabled else None
        return await self.store.create(fields)

    async def get(self, automation_id: int) -> AutomationRow:
        row = await self.store.get(automation_id)
        if row is None:
            raise NotFound(
                f"No automation with id {automation_id}. List them with GET /automations."
            )
        return row

    async def all(self) -> list[AutomationRow]:
        return await self.store.all()

    async def runs(self, automation_id: int) -> list[AutomationRunRow]:
        return await self.store.runs(automation_id)

    async def update(self, automation_id: int, fields: dict[str, Any]) -> AutomationRow:
        """Change some fields; an empty change leaves the automation untouched.

        ``next_run_at`` is null while disabled; it is recomputed from now when
        the trigger changes (while enabled) or the automation is enabled.
        Those two moments also set ``enabled_at``: calendar triggers only fire
        for events starting from then on. A one-shot automation whose time
        has passed cannot be enabled again without a new time."""
        row = await self.get(automation_id)
        if not fields:
            return row
        fields = dict(fields)
        if "trigger" in fields:
            fields["trigger"] = validate_trigger(fields["trigger"], self.zone, utcnow())
        if "notifiers" in fields:
            await self._check_notifiers(fields["notifiers"])
        enabled = fields.get("enabled", row.enabled)
        if not enabled:
            fields["next_run_at"] = None
            fields["enabled_at"] = None
        elif "trigger" in fields or not row.enabled:
            now = utcnow()
            trigger = fields.get("trigger", row.trigger)
            fields["next_run_at"] = self._next(trigger, now)
            fields["enabled_at"] = iso(now)
            if is_once(trigger) and fields["next_run_at"] is None:
                raise InvalidRequest(
                    f"This one-shot automation's time ({trigger['once']}) has passed;"
                    " give it a new trigger to enable it again.",
                    loc=["body", "enabled"],
                )
        updated = await self.store.update(automation_id, fields)
        if updated is None:  # deleted by a request that ran in between
            raise NotFound(f"No automation with id {automation_id}.")
        return updated

    async def flip(self, automation_id: int, field: str) -> AutomationRow:
        row = await self.get(automation_id)
        return await self.update(automation_id, {field: not getattr(row, field)})

    async def session_of(self, row: AutomationRow) -> str | None:
        """The id of the automation's session while it exists, else None."""
        if row.session_id is None or await self.c.sessions.find(row.session_id) is None:
            return None
        return row.session_id

    async def delete(self, automation_id: int) -> None:
        """Delete; a run in progress is cancelled first and ends as such
        (``run_cancelled`` in its session, ``automation_finished`` with status
        ``cancelled`` on the automation feed)."""
        await self.get(automation_id)
        task = self.running.get(automation_id)
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
            await self._cancel_chat_run(automation_id)
        await self.store.delete(automation_id)

    async def _cancel_chat_run(self, automation_id: int) -> None:
        """End the agent run in the automation's session: nobody follows it now."""
        row = await self.store.get(automation_id)
        if row is None or row.session_id is None:
            return
        try:
            await self.chat.cancel(None, row.session_id)
        except FamulusError:  # the session is gone, so is its run
            pass

    def is_running(self, automation_id: int) -> bool:
        return automation_id in self.running or automation_id in self._starting

    # -- runs ----------------------------------------------------------------

    async def run_now(self, automation_id: int) -> int:
        row = await self.get(automation_id)
        if self.is_running(automation_id):
            raise Conflict(f"Automation {automation_id} is already running.")
        return await self._launch(row, MANUAL)

    async def wait_run(
        self, automation_id: int, run_row: int, timeout_s: float
    ) -> AutomationRunRow | None:
        """Wait up to ``timeout_s`` for a run started by ``run_now`` to end; its row
        once ended, else None (it goes on). Waiting never cancels the run."""
        task = self.running.get(automation_id)
        if task is not None:
            await asyncio.wait({task}, timeout=timeout_s)
        run = await self.store.run(run_row)
        return run if run is not None and run.status != "running" else None

    async def fire(self, row: AutomationRow, task: str) -> int | None:
        """Start a run with ``task`` instead of the bare description (event
        triggers add the event); None when the automation is already running."""
        if self.is_running(row.id):
            return None
        return await self._launch(row, CALENDAR, task)

    async def _launch(self, row: AutomationRow, fired_by: str, task: str | None = None) -> int:
        self._starting.add(row.id)
        try:
            run_row = await self.store.start_run(row.id, now_iso(), fired_by)
            self.running[row.id] = asyncio.create_task(
                self._run(row, run_row, task or row.description)
            )
        finally:
            self._starting.discard(row.id)
        return run_row

    async def _run(self, row: AutomationRow, run_row: int, task: str) -> None:
        """Run, record the result together with its pending deliveries, make
        each delivery's first try, then publish the outcome. Later tries are
        the delivery queue's; a final delivery failure marks the run."""
        started = utcnow()
        self._broadcast({"type": "automation_started", "id": row.id, "run_id": run_row})
        recorded, status, result = False, "cancelled", "Cancelled."
        session_id: str | None = None
        try:
            if row.kind == REMINDER:  # nothing to think about: the text is the output
                outcome = runner.Outcome("ok", row.description, None)
            else:
                session_id = await self._session(row)
                await self.store.run_in_session(run_row, session_id)
                outcome = await runner.execute(
                    self.c.events, self.chat, session_id, task, row.writable, row.id
                )
            title = row.name + ("" if outcome.status == "ok" else f" ({outcome.status})")
            current = await self.store.get(row.id)  # notifiers may have changed meanwhile
            names = current.notifiers if current is not None else row.notifiers
            ids = await self.store.finish_run(
                run_row,
                outcome.status,
                outcome.result,
                outcome.run_id,
                (row.id, names, title),
                outcome.usage,
            )
            recorded, status, result = True, outcome.status, outcome.result
            await self._first_tries(ids)
            done = await self.store.run(run_row)
            if done is not None:
                status, result = done.status, done.result or ""
            await self.store.update(
                row.id,
                {"last_run_at": iso(started), "last_result": result, "last_status": status},
                touch=False,
            )
            if session_id is not None:
                await self._learn(row, session_id, status, result)
            self._finished(row.id, run_row, status, result)
        except asyncio.CancelledError:
            # Cancelled (deleted, server stopping): the feed still hears how
            # the run ended; a recorded result stays as it is.
            if not recorded:
                await self.store.finish_run(run_row, status, result, None)
            self._finished(row.id, run_row, status, result)
            raise
        finally:
            self.running.pop(row.id, None)

    def _finished(self, automation_id: int, run_row: int, status: str, result: str) -> None:
        self._broadcast(
            {
                "type": "automation_finished",
                "id": automation_id,
                "run_id": run_row,
                "status": status,
                "result": result,
            }
        )

    async def _first_tries(self, delivery_ids: list[int]) -> None:
        """Try every delivery once now, so a working notifier has the result
        by the time the run is reported finished."""
        if not delivery_ids:
            return
        await asyncio.gather(*(self.deliveries.attempt(i) for i in delivery_ids))
        self.deliveries.wake()  # anything not delivered is the loop's now

    async def delivery_changed(self, delivery: DeliveryRow) -> None:
        """Each try's outcome goes on the automation feed. (A delivery that
        failed for good has already marked its run; see store/deliveries.py.)"""
        self._broadcast(
            {
                "type": "notifier_delivery",
                "id": delivery.automation_id,
                "run_id": delivery.run_id,
                "notifier": delivery.notifier,
                "status": delivery.status,
                "attempt": delivery.attempts,
                "next_attempt_at": delivery.next_attempt_at,
                "error": delivery.last_error if delivery.status != DELIVERED else None,
            }
        )

    async def runs_with_deliveries(
        self, automation_id: int, limit: int = 20, offset: int = 0
    ) -> list[tuple[AutomationRunRow, list[DeliveryRow]]]:
        """A page of the automation's runs, newest first, each with its deliveries."""
        return await self.store.runs_with_deliveries(automation_id, limit, offset)

    async def run_count(self, automation_id: int) -> int:
        return await self.store.count_runs(automation_id)

    async def _session(self, row: AutomationRow) -> str:
        """The automation's own session, reused across runs; a new one on the
        first run or when the person archived or deleted the old one."""
        sessions = self.c.sessions
        current = await self.store.get(row.id)  # ``row`` may predate an earlier run
        session_id = current.session_id if current is not None else row.session_id
        if session_id:
            got = await sessions.find(session_id)
            if got is not None and got.archived_at is None:
                return session_id
        created = await sessions.create(f"Automation: {row.name}", origin=AUTOMATION)
        await self.store.update(row.id, {"session_id": created.session_id}, touch=False)
        return created.session_id

    async def _learn(self, row: AutomationRow, session_id: str, status: str, result: str) -> None:
        if not row.writable:  # read-only: memory is not to change
            return
        try:
            await self.memory.record_learning_event(
                "automation_outcome",
                f"Automation '{row.name}' finished: {status}",
                session_id=session_id,
                run_id=None,
                data={"automation_id": row.id, "result": result[:2000]},
            )
        except Exception:
            log.exception("recording the automation outcome failed")

    # -- scheduler -----------------------------------------------------------

    def _next(self, trigger: dict[str, Any], after: datetime) -> str | None:
        fire = next_fire(trigger, after, self.zone)
        return iso(fire) if fire else None

    def _after_fire(self, row: AutomationRow, now: datetime) -> dict[str, Any]:
        """What changes when the scheduler starts ``row``: the next slot; a
        one-shot is switched off at that moment, so no restart (not even
        after a crash mid-run) runs it twice."""
        if is_once(row.trigger):
            return {"next_run_at": None, "enabled": False, "enabled_at": None}
        return {"next_run_at": self._next(row.trigger, now)}

    async def tick(self) -> None:
        now = utcnow()
        for row in await self.store.all():
            if not row.enabled or row.next_run_at is None or self.is_running(row.id):
                continue
            if row.trigger.get("type") == "event":
                continue  # the calendar watcher fires these; next_run_at only informs
            slot = parse_iso(row.next_run_at)
            if slot <= now:
                await self.store.update(row.id, self._after_fire(row, now), touch=False)
                await self._launch(row, CATCH_UP if slot < self.started_at else SCHEDULE)

    async def start(self) -> None:
        self.started_at = utcnow()
        await self.store.interrupt_running()
        self._loop = asyncio.create_task(self._scheduler())

    async def _scheduler(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("automation scheduler tick failed")
            await asyncio.sleep(TICK_S)

    async def stop(self) -> None:
        tasks = [t for t in [self._loop, *self.running.values()] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- events --------------------------------------------------------------

    @property
    def listeners(self) -> set[asyncio.Queue[dict[str, Any]]]:
        return self.feed.listeners

    async def close_listeners(self) -> None:
        """End every /automations/events stream at once when the server begins to
        stop, so shutdown never waits on a feed that would stay open forever."""
        await self.feed.close()

    def _broadcast(self, event: dict[str, Any]) -> None:
        self.feed.broadcast(event)

    async def _check_notifiers(self, names: list[str]) -> None:
        missing = await self.notifiers.missing(names)
        if missing:
            raise InvalidRequest(
                f"Unknown notifier(s): {', '.join(missing)}. Create them with POST /notifiers/configs.",
                loc=["body", "notifiers"],
            )
