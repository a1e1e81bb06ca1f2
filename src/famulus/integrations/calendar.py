"""The calendar half of the mail and calendar account: a CalDAV client.

The ``caldav`` library does the protocol (discovery of the principal and its
calendars, REPORT queries, PUT of new objects) and, with ``icalendar`` and
``recurring-ical-events`` underneath, expands recurring events client-side.
It is synchronous, so every call runs in a worker thread.

Times: an event's start and end are returned as aware datetimes. A floating
time (no zone) is read in the configured zone; an all-day event starts at
midnight of its day in that zone.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from famulus.agent.clock import zone_name
from famulus.container import Container
from famulus.integrations import account
from famulus.settings import Settings

TIMEOUT_S = 30


class CalendarError(Exception):
    """The CalDAV server could not be reached or refused the request."""


@dataclass(frozen=True)
class CalendarEvent:
    uid: str
    summary: str
    start: datetime
    end: datetime
    location: str | None
    description: str | None
    calendar: str | None
    all_day: bool = False


async def available(c: Container) -> bool:
    """The calendar is used only when the account is active and CalDAV is set."""
    return bool(c.settings.caldav_url) and await account.active(c)


def _aware(value: date | datetime, zone: ZoneInfo) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=zone)
    return datetime.combine(value, time(0), tzinfo=zone)


def _text(component: Any, name: str) -> str | None:
    value = component.get(name)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _event(component: Any, calendar: str | None, zone: ZoneInfo) -> CalendarEvent | None:
    dtstart = component.get("dtstart")
    if dtstart is None:
        return None
    raw_start = dtstart.dt
    all_day = not isinstance(raw_start, datetime)
    start = _aware(raw_start, zone)
    if component.get("dtend") is not None:
        end = _aware(component.get("dtend").dt, zone)
    elif component.get("duration") is not None:
        end = start + component.get("duration").dt
    else:
        end = start + timedelta(days=1) if all_day else start
    return CalendarEvent(
        uid=_text(component, "uid") or "",
        summary=_text(component, "summary") or "(no title)",
        start=start,
        end=end,
        location=_text(component, "location"),
        description=_text(component, "description"),
        calendar=calendar,
        all_day=all_day,
    )


def describe(event: CalendarEvent, zone: ZoneInfo, description_chars: int = 500) -> str:
    """One event as a few lines of text, times in ``zone``."""
    start, end = event.start.astimezone(zone), event.end.astimezone(zone)
    if event.all_day:
        when = f"{start:%a %Y-%m-%d} (all day)"
    elif start.date() == end.date():
        when = f"{start:%a %Y-%m-%d %H:%M}–{end:%H:%M}"
    else:
        when = f"{start:%a %Y-%m-%d %H:%M} – {end:%a %Y-%m-%d %H:%M}"
    line = f"- {when}: {event.summary}"
    if event.location:
        line += f" @ {event.location}"
    if event.calendar:
        line += f" [{event.calendar}]"
    if event.description:
        text = event.description
        if len(text) > description_chars:
            text = text[:description_chars] + "…"
        line += "\n  " + text.replace("\n", "\n  ")
    return line


class CalendarClient:
    def __init__(self, settings: Settings) -> None:
        if not settings.caldav_url:
            raise CalendarError("No CalDAV URL is configured (FAMULUS_CALDAV_URL).")
        self.url = settings.caldav_url
        self.username = settings.account_username
        self.password = (
            settings.account_password.get_secret_value() if settings.account_password else None
        )
        self.zone = ZoneInfo(zone_name(settings.timezone))

    # -- public, async -------------------------------------------------------

    async def events(self, start: datetime, end: datetime) -> list[CalendarEvent]:
        """Events overlapping [start, end) in every calendar, recurrences
        expanded, sorted by start."""
        return await asyncio.to_thread(self._events, start, end)

    async def create(
        self,
        summary: str,
        start: datetime,
        end: datetime,
        location: str | None = None,
        description: str | None = None,
    ) -> CalendarEvent:
        """Create an event in the first calendar of the account."""
        return await asyncio.to_thread(self._create, summary, start, end, location, description)

    # -- the blocking work ---------------------------------------------------

    def _client(self) -> Any:
        from caldav.davclient import DAVClient

        return DAVClient(
            url=self.url,
            username=self.username,
            password=self.password,
            timeout=TIMEOUT_S,
            # The URL is given in full: no DNS-based service discovery.
            enable_rfc6764=False,
        )

    def _calendars(self, client: Any) -> list[Any]:
        return list(client.principal().calendars())

    def _events(self, start: datetime, end: datetime) -> list[CalendarEvent]:
        found: list[CalendarEvent] = []
        try:
            with self._client() as client:
                for cal in self._calendars(client):
                    name = cal.get_display_name()
                    results = cal.search(
                        start=start.astimezone(UTC),
                        end=end.astimezone(UTC),
                        event=True,
                        expand=True,
                    )
                    for obj in results:
                        for component in obj.icalendar_instance.walk("VEVENT"):
                            event = _event(component, name, self.zone)
                            if event is not None and event.end >= start and event.start < end:
                                found.append(event)
        except CalendarError:
            raise
        except Exception as exc:
            raise CalendarError(f"The calendar server failed: {_reason(exc)}") from exc
        found.sort(key=lambda e: (e.start, e.summary))
        return found

    def _create(
        self,
        summary: str,
        start: datetime,
        end: datetime,
        location: str | None,
        description: str | None,
    ) -> CalendarEvent:
        start, end = _aware(start, self.zone), _aware(end, self.zone)
        uid = f"{uuid.uuid4()}@famulus"
        fields: dict[str, Any] = {"uid": uid, "summary": summary, "dtstart": start, "dtend": end}
        if location:
            fields["location"] = location
        if description:
            fields["description"] = description
        try:
            with self._client() as client:
                calendars = self._calendars(client)
                if not calendars:
                    raise CalendarError("The account has no calendar to add the event to.")
                cal = calendars[0]
                name = cal.get_display_name()
                cal.add_event(**fields)
        except CalendarError:
            raise
        except Exception as exc:
            raise CalendarError(f"The calendar server failed: {_reason(exc)}") from exc
        return CalendarEvent(uid, summary, start, end, location, description, name)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
