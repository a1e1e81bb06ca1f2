"""GET /usage and ``famulus usage``: a time range, grouped totals over the ledger.

Dates are the person's (their time zone): ``from=2026-11-01&to=2026-11-30``
covers both days whole. ISO datetimes are taken as they are. Without ``from``
the range starts 29 days before today (30 days with today). Days are formed
from the ledger's UTC hours, so a zone whose offset is not whole hours puts
a request in the half hour around midnight on a neighbouring day.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from famulus.errors import InvalidRequest
from famulus.store.usage import GROUPINGS, UsageSum
from famulus.timeutil import iso, utcnow

GROUP_BY = tuple(GROUPINGS)
DEFAULT_DAYS = 30


@dataclass(frozen=True)
class Range:
    start: datetime
    end: datetime  # exclusive


def _bound(value: str, zone: ZoneInfo, field: str, *, end: bool) -> datetime:
    """A date (its local midnight; for ``to`` the next one) or an ISO datetime."""
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            if end:
                day += timedelta(days=1)
            return datetime(day.year, day.month, day.day, tzinfo=zone)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(
            f"{field}: a date (YYYY-MM-DD) or an ISO datetime is expected.", ["query", field]
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def time_range(start: str | None, end: str | None, zone: ZoneInfo) -> Range:
    until = _bound(end, zone, "to", end=True) if end else utcnow()
    if start:
        since = _bound(start, zone, "from", end=False)
    else:
        today = until.astimezone(zone).date() - timedelta(days=DEFAULT_DAYS - 1)
        since = datetime(today.year, today.month, today.day, tzinfo=zone)
    if since >= until:
        raise InvalidRequest("from: must be before to.", ["query", "from"])
    return Range(since, until)


def _add(a: UsageSum, b: UsageSum, key: str | None) -> UsageSum:
    cost = None if a.cost is None and b.cost is None else (a.cost or 0.0) + (b.cost or 0.0)
    return UsageSum(
        key,
        a.label or b.label,
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cache_read_tokens + b.cache_read_tokens,
        cost,
        a.calls + b.calls,
    )


_ZERO = UsageSum(None, None, 0, 0, 0, None, 0)


def by_day(hours: Sequence[UsageSum], zone: ZoneInfo) -> list[UsageSum]:
    """Fold UTC-hour sums (keys ``YYYY-MM-DDTHH``) into the person's days."""
    days: dict[str, UsageSum] = {}
    for hour in hours:
        moment = datetime.fromisoformat(f"{hour.key}:00:00+00:00")
        day = moment.astimezone(zone).date().isoformat()
        days[day] = _add(days.get(day, _ZERO), hour, day)
    return [days[d] for d in sorted(days)]


def report(span: Range, group_by: str, sums: Sequence[UsageSum], zone: ZoneInfo) -> dict[str, Any]:
    groups = by_day(sums, zone) if group_by == "day" else list(sums)
    total = _ZERO
    for group in groups:
        total = _add(total, group, None)
    return {
        "from": iso(span.start),
        "to": iso(span.end),
        "group_by": group_by,
        "total": _body(total),
        "groups": [{"key": g.key, "label": g.label, **_body(g)} for g in groups],
    }


def _body(s: UsageSum) -> dict[str, Any]:
    body = asdict(s)
    del body["key"], body["label"]
    if s.cost is not None:
        body["cost"] = round(s.cost, 6)
    return body


Summer = Callable[[str, str, str], Awaitable[list[UsageSum]]]


async def usage_report(
    summer: Summer, zone: ZoneInfo, start: str | None, end: str | None, group_by: str
) -> dict[str, Any]:
    span = time_range(start, end, zone)
    return report(span, group_by, await summer(iso(span.start), iso(span.end), group_by), zone)


def usage_report_sync(
    summer: Callable[[str, str, str], list[UsageSum]],
    zone: ZoneInfo,
    start: str | None,
    end: str | None,
    group_by: str,
) -> dict[str, Any]:
    """The same report from a synchronous reader (``famulus usage`` without a server)."""
    span = time_range(start, end, zone)
    return report(span, group_by, summer(iso(span.start), iso(span.end), group_by), zone)
