"""The agent's calendar tools, offered only while the calendar is available.

``calendar_events`` only reads; ``create_calendar_event`` writes, so it asks
first (``requires_approval``) unless approvals are skipped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pydantic_ai.toolsets import FunctionToolset

from famulus.agent.clock import zone_name
from famulus.agent.outcome import failure
from famulus.agent.scope import used
from famulus.agent.sink import AgentDeps
from famulus.core import Core
from famulus.hooks import ToolsetProvider
from famulus.integrations import calendar
from famulus.integrations.calendar import CalendarClient, CalendarError, describe
from famulus.timeutil import utcnow

MAX_DAYS = 366
MAX_EVENTS = 200


def calendar_toolset(client: CalendarClient, zone: ZoneInfo) -> FunctionToolset[AgentDeps]:
    tools: FunctionToolset[AgentDeps] = FunctionToolset()

    @tools.tool_plain
    async def calendar_events(days_ahead: int = 7) -> str:
        """List the person's calendar events from now until days_ahead days ahead.

        Events already under way are included; recurring events are expanded.
        """
        days = max(1, min(int(days_ahead), MAX_DAYS))
        now = utcnow()
        try:
            events = await client.events(now, now + timedelta(days=days))
        except CalendarError as exc:
            return f"The calendar could not be read: {exc}"
        used("calendar")
        if not events:
            return f"No calendar events in the next {days} day(s)."
        shown = events[:MAX_EVENTS]
        head = f"{len(events)} event(s) in the next {days} day(s), times in {zone.key}:"
        more = f"\n(and {len(events) - len(shown)} more)" if len(events) > len(shown) else ""
        return head + "\n" + "\n".join(describe(e, zone) for e in shown) + more

    @tools.tool_plain(requires_approval=True)
    async def create_calendar_event(
        summary: str,
        start: datetime,
        end: datetime,
        location: str | None = None,
        description: str | None = None,
    ) -> str:
        """Add an event to the person's calendar.

        start and end are ISO 8601 date-times; without an offset they are read
        in the person's time zone.
        """
        start = start if start.tzinfo else start.replace(tzinfo=zone)
        end = end if end.tzinfo else end.replace(tzinfo=zone)
        if not summary.strip():
            return failure("Not created: the event needs a summary.")
        if end <= start:
            return failure("Not created: the end must be after the start.")
        try:
            event = await client.create(summary.strip(), start, end, location, description)
        except CalendarError as exc:
            return failure(f"Not created: {exc}")
        used("calendar")
        return "Created:\n" + describe(event, zone)

    return tools


def provider(core: Core) -> ToolsetProvider:
    """Asked on every run: the calendar tools while the calendar is available."""
    zone = ZoneInfo(zone_name(core.settings.timezone))
    built: list[Any] = []  # one toolset for every run (see agent/toolcache.py)

    async def provide() -> list[Any]:
        if not await calendar.available(core):
            return []
        if not built:
            built.append(calendar_toolset(CalendarClient(core.settings), zone))
        return list(built)

    return provide
