"""Fires calendar-triggered automations.

Every ``calendar_poll_s`` seconds, while the calendar is available and at
least one event automation is enabled, the watcher lists the events starting
between ``now - GRACE`` and ``now + largest lead + HORIZON`` and, for each
enabled automation ``{"type":"event","event_type":"calendar","lead_minutes":L}``:

- an occurrence is *due* when ``start - L <= now``, ``start > now - grace``
  (grace: twice the poll interval, at least 5 minutes) and ``start`` is not
  before the automation's ``enabled_at`` (when it was created enabled,
  enabled again, or had its trigger changed). So an event already inside the
  lead window but not yet started when the automation is created fires at
  once; one that had started by then never fires; one that started while
  the server was down fires at start-up if still within the grace.
- each (automation, event UID, event start) fires at most once, recorded in
  SQLite *before* the run starts; a moved event (new start) is a new
  occurrence. All due occurrences found in one poll go into one run, whose
  task is the description followed by the events' details.
- an automation that is still running is left alone; its due occurrences
  stay due and fire at a later poll while within the grace.
- ``next_run_at`` shows the next fire time among the events in view (about
  a day ahead), else null.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from famulus.agent.clock import zone_name
from famulus.automations.service import AutomationService
from famulus.core import Core
from famulus.integrations import calendar
from famulus.integrations.calendar import CalendarClient, CalendarError, CalendarEvent, describe
from famulus.store.automations import AutomationRow
from famulus.store.calendar_fired import CalendarFiredStore
from famulus.timeutil import iso, parse_iso, utcnow

log = logging.getLogger(__name__)

HORIZON = timedelta(days=1)
MIN_GRACE = timedelta(minutes=5)
KEEP_FIRED = timedelta(days=7)


def is_calendar_trigger(row: AutomationRow) -> bool:
    t = row.trigger
    return t.get("type") == "event" and t.get("event_type") == "calendar"


def task_for(row: AutomationRow, events: list[CalendarEvent], zone: ZoneInfo) -> str:
    lead = int(row.trigger.get("lead_minutes", 0))
    when = "when it starts" if lead == 0 else f"{lead} minute(s) before it starts"
    noun = "this calendar event" if len(events) == 1 else "these calendar events"
    lines = "\n".join(describe(e, zone, description_chars=2000) for e in events)
    return (
        f"{row.description}\n\n"
        f"(This automation runs {when}; it was triggered by {noun}, times in {zone.key}:)\n"
        f"{lines}"
    )


def _active_since(row: AutomationRow) -> datetime:
    """Events starting before this moment never fire for ``row``."""
    return parse_iso(row.enabled_at or row.updated_at)


class CalendarWatcher:
    def __init__(self, c: Core, service: AutomationService, store: CalendarFiredStore):
        self.c = c
        self.service = service
        self.store = store
        self.poll_s = max(float(c.settings.calendar_poll_s), 0.05)
        self.grace = max(timedelta(seconds=2 * self.poll_s), MIN_GRACE)
        self.zone = ZoneInfo(zone_name(c.settings.timezone))
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                await self.poll()
            except CalendarError as exc:
                if not self._failing:  # say it once per outage, not every poll
                    log.warning("calendar poll failed: %s", exc)
                self._failing = True
            except Exception:
                log.exception("calendar poll failed")
            else:
                self._failing = False
            await asyncio.sleep(self.poll_s)

    async def poll(self, now: datetime | None = None) -> list[int]:
        """One look at the calendar; returns the automation ids started."""
        now = now or utcnow()
        rows = [r for r in await self.service.all() if is_calendar_trigger(r)]
        active = [r for r in rows if r.enabled]
        if not active or not await calendar.available(self.c):
            await self._show_next(rows, {})
            return []
        lead_max = max(int(r.trigger["lead_minutes"]) for r in active)
        events = await CalendarClient(self.c.settings).events(
            now - self.grace, now + timedelta(minutes=lead_max) + HORIZON
        )
        events = [e for e in events if e.uid]
        started: list[int] = []
        upcoming: dict[int, datetime] = {}
        for row in active:
            lead = timedelta(minutes=int(row.trigger["lead_minutes"]))
            future = [e.start - lead for e in events if e.start - lead > now]
            if future:
                upcoming[row.id] = min(future)
            since = _active_since(row)
            due = [
                e
                for e in events
                if e.start - lead <= now and e.start > now - self.grace and e.start >= since
            ]
            if not due or self.service.is_running(row.id):
                continue
            fired = await self.store.fired(row.id)
            due = [e for e in due if (e.uid, iso(e.start)) not in fired]
            claimed = [e for e in due if await self.store.claim(row.id, e.uid, iso(e.start))]
            if not claimed:
                continue
            if await self.service.fire(row, task_for(row, claimed, self.zone)) is None:
                # Started by hand meanwhile: the occurrences stay due for later.
                for e in claimed:
                    await self.store.release(row.id, e.uid, iso(e.start))
            else:
                started.append(row.id)
        await self._show_next(rows, upcoming)
        await self.store.prune(iso(now - KEEP_FIRED))
        return started

    async def _show_next(self, rows: list[AutomationRow], upcoming: dict[int, datetime]) -> None:
        for row in rows:
            at = upcoming.get(row.id)
            value = iso(at) if at is not None and row.enabled else None
            if value != row.next_run_at:
                await self.service.store.update(row.id, {"next_run_at": value}, touch=False)
