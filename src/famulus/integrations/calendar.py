"""The calendar half of the mail and calendar account: a small CalDAV client.

CalDAV is WebDAV plus a few reports, so the client speaks it over httpx:
PROPFIND finds the principal, its calendar home and the calendars in it (or
the configured URL is a calendar itself); a ``calendar-query`` REPORT with a
time range fetches the events; PUT with ``If-None-Match: *`` adds one.
``icalendar`` parses and writes the iCalendar data and ``recurring-ical-events``
expands recurring events into their occurrences. (The ``caldav`` package was
tried first, but its HTTP stack replaces the installed ``urllib3`` package on
every interpreter start, which breaks ``requests`` users.) Authentication is
HTTP Basic with the account's login.

Times: an event's start and end are returned as aware datetimes. A floating
time (no zone) is read in the configured zone; an all-day event starts at
midnight of its day in that zone.
"""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urljoin
from zoneinfo import ZoneInfo

import httpx
import icalendar
import recurring_ical_events

from famulus.agent.clock import zone_name
from famulus.core import Core
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


async def available(c: Core) -> bool:
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


DAV = "{DAV:}"
CAL = "{urn:ietf:params:xml:ns:caldav}"
_PROPFIND_SELF = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop>'
    "<d:current-user-principal/><c:calendar-home-set/><d:resourcetype/><d:displayname/>"
    "</d:prop></d:propfind>"
)
_PROPFIND_CALENDARS = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop>'
    "<d:resourcetype/><d:displayname/><c:supported-calendar-component-set/>"
    "</d:prop></d:propfind>"
)
_QUERY = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'
    "<d:prop><d:getetag/><c:calendar-data/></d:prop>"
    '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
    '<c:time-range start="{start}" end="{end}"/>'
    "</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"
)


@dataclass(frozen=True)
class _Calendar:
    url: str
    name: str | None


def _stamp(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _responses(body: bytes) -> list[tuple[str, ET.Element]]:
    """(href, merged prop element of the 2xx propstats) per multistatus response."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise CalendarError("The calendar server sent a malformed answer.") from exc
    found = []
    for response in root.iter(f"{DAV}response"):
        href = (response.findtext(f"{DAV}href") or "").strip()
        merged = ET.Element("prop")
        for propstat in response.iter(f"{DAV}propstat"):
            status = propstat.findtext(f"{DAV}status") or ""
            prop = propstat.find(f"{DAV}prop")
            if prop is not None and " 2" in status:
                merged.extend(list(prop))
        found.append((href, merged))
    return found


def _href(prop: ET.Element, name: str) -> str | None:
    el = prop.find(name)
    if el is None:
        return None
    text = el.findtext(f"{DAV}href")
    return text.strip() if text and text.strip() else None


def _is_calendar(prop: ET.Element) -> bool:
    kind = prop.find(f"{DAV}resourcetype")
    if kind is None or kind.find(f"{CAL}calendar") is None:
        return False
    components = prop.find(f"{CAL}supported-calendar-component-set")
    if components is None or len(components) == 0:
        return True
    return any(c.get("name", "").upper() == "VEVENT" for c in components)


class CalendarClient:
    def __init__(self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None):
        if not settings.caldav_url:
            raise CalendarError("No CalDAV URL is configured (FAMULUS_CALDAV_URL).")
        self.url = settings.caldav_url
        password = settings.account_password.get_secret_value() if settings.account_password else ""
        self.auth = (
            httpx.BasicAuth(settings.account_username, password)
            if settings.account_username
            else None
        )
        self.zone = ZoneInfo(zone_name(settings.timezone))
        self.transport = transport

    # -- public --------------------------------------------------------------

    async def events(self, start: datetime, end: datetime) -> list[CalendarEvent]:
        """Events overlapping [start, end) in every calendar, recurrences
        expanded, sorted by start."""
        found: list[CalendarEvent] = []
        async with self._http() as http:
            for cal in await self._calendars(http):
                body = _QUERY.format(start=_stamp(start), end=_stamp(end))
                answer = await self._dav(http, "REPORT", cal.url, body, depth="1")
                for _, prop in _responses(answer):
                    data = prop.findtext(f"{CAL}calendar-data")
                    if data and data.strip():
                        found.extend(self._expand(data, cal.name, start, end))
        found.sort(key=lambda e: (e.start, e.summary))
        return found

    async def create(
        self,
        summary: str,
        start: datetime,
        end: datetime,
        location: str | None = None,
        description: str | None = None,
    ) -> CalendarEvent:
        """Create an event in the first calendar of the account."""
        start, end = _aware(start, self.zone), _aware(end, self.zone)
        uid = f"{uuid.uuid4()}@famulus"
        cal = icalendar.Calendar()
        cal.add("prodid", "-//famulus//calendar//EN")
        cal.add("version", "2.0")
        event = icalendar.Event()
        event.add("uid", uid)
        event.add("dtstamp", datetime.now(UTC))
        event.add("summary", summary)
        event.add("dtstart", start.astimezone(UTC))
        event.add("dtend", end.astimezone(UTC))
        if location:
            event.add("location", location)
        if description:
            event.add("description", description)
        cal.add_component(event)
        async with self._http() as http:
            calendars = await self._calendars(http)
            if not calendars:
                raise CalendarError("The account has no calendar to add the event to.")
            target = calendars[0]
            url = urljoin(target.url.rstrip("/") + "/", f"{uuid.uuid4().hex}.ics")
            await self._send(
                http,
                "PUT",
                url,
                cal.to_ical(),
                {"Content-Type": "text/calendar; charset=utf-8", "If-None-Match": "*"},
            )
        return CalendarEvent(uid, summary, start, end, location, description, target.name)

    # -- protocol ------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            auth=self.auth,
            timeout=TIMEOUT_S,
            follow_redirects=True,
            transport=self.transport,
        )

    async def _send(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: str,
        body: str | bytes,
        headers: dict[str, str],
    ) -> httpx.Response:
        try:
            response = await http.request(method, url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise CalendarError(
                f"The calendar server could not be reached: {_reason(exc)}"
            ) from exc
        if response.status_code in (401, 403):
            raise CalendarError("The calendar server refused the account's login.")
        if response.status_code >= 400:
            raise CalendarError(
                f"The calendar server answered {method} with HTTP {response.status_code}."
            )
        return response

    async def _dav(
        self, http: httpx.AsyncClient, method: str, url: str, body: str, depth: str
    ) -> bytes:
        headers = {"Content-Type": "application/xml; charset=utf-8", "Depth": depth}
        response = await self._send(http, method, url, body, headers)
        return response.content

    async def _calendars(self, http: httpx.AsyncClient) -> list[_Calendar]:
        answer = await self._dav(http, "PROPFIND", self.url, _PROPFIND_SELF, depth="0")
        props = _responses(answer)
        if not props:
            raise CalendarError("The calendar server's answer named no resource.")
        _, prop = props[0]
        if _is_calendar(prop):  # the URL is a calendar itself
            return [_Calendar(self.url, prop.findtext(f"{DAV}displayname"))]
        home = _href(prop, f"{CAL}calendar-home-set")
        if home is None:
            principal = _href(prop, f"{DAV}current-user-principal")
            if principal is None:
                raise CalendarError("The CalDAV URL names no principal or calendar.")
            principal_url = urljoin(self.url, principal)
            answer = await self._dav(http, "PROPFIND", principal_url, _PROPFIND_SELF, depth="0")
            found = _responses(answer)
            home = _href(found[0][1], f"{CAL}calendar-home-set") if found else None
            if home is None:
                raise CalendarError("The account's principal names no calendar home.")
        home_url = urljoin(self.url, home)
        answer = await self._dav(http, "PROPFIND", home_url, _PROPFIND_CALENDARS, depth="1")
        calendars = [
            _Calendar(urljoin(home_url, href), prop.findtext(f"{DAV}displayname"))
            for href, prop in _responses(answer)
            if href and _is_calendar(prop)
        ]
        calendars.sort(key=lambda c: c.url)
        return calendars

    def _expand(
        self, data: str, name: str | None, start: datetime, end: datetime
    ) -> list[CalendarEvent]:
        try:
            parsed = icalendar.Calendar.from_ical(data)
            components = recurring_ical_events.of(parsed).between(start, end)
        except Exception:  # one broken object must not hide the rest
            return []
        found = []
        for component in components:
            if component.name != "VEVENT":
                continue
            event = _event(component, name, self.zone)
            if event is not None and event.end >= start and event.start < end:
                found.append(event)
        return found


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
