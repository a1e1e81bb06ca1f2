"""Trigger validation and fire-time arithmetic.

Daily/weekday schedules become a cron expression handed to croniter, and raw
cron expressions go to it as they are, so calendar arithmetic (month ends,
DST) is the library's, not ours. Times are in the server's configured zone. A
one-shot trigger (``once``) is a single moment: a local time in that zone, or
a time with its own offset.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from famulus.errors import InvalidRequest

DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_NAMED = {"daily": "*", "weekdays": "1-5", "weekends": "6,0"}
_CRON_DAY = {"mon": "1", "tue": "2", "wed": "3", "thu": "4", "fri": "5", "sat": "6", "sun": "0"}
# The five fields of a cron expression and what each accepts, for the 422 that
# names the field at fault (croniter only says "out of range").
CRON_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day of month", "1-31"),
    ("month", "1-12 or jan-dec"),
    ("day of week", "0-7 or sun-sat (0 and 7 are Sunday)"),
)
_ONCE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AtTrigger(_Strict):
    type: str
    at: str
    days: str = "daily"

    @field_validator("at")
    @classmethod
    def _at(cls, v: str) -> str:
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
            raise ValueError("must be 24-hour HH:MM, e.g. 07:30")
        return v

    @field_validator("days")
    @classmethod
    def _days(cls, v: str) -> str:
        v = v.strip().lower()
        if v in _NAMED:
            return v
        parts = [p.strip() for p in v.split(",")]
        if not parts or any(p not in DAYS for p in parts):
            raise ValueError(
                "must be daily, weekdays, weekends or a comma list of mon,tue,wed,thu,fri,sat,sun"
            )
        return ",".join(parts)


class EveryTrigger(_Strict):
    type: str
    every: str

    @field_validator("every")
    @classmethod
    def _every(cls, v: str) -> str:
        m = re.fullmatch(r"(\d{1,5})([mh])", v.strip())
        if not m or int(m.group(1)) < 1:
            raise ValueError("must be a number followed by m or h, at least 1m, e.g. 30m or 2h")
        return v.strip()


class EventTrigger(_Strict):
    type: str
    event_type: str
    lead_minutes: int = Field(ge=0, le=1440)

    @field_validator("event_type")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v != "calendar":
            raise ValueError("only 'calendar' events are supported")
        return v


class CronTrigger(_Strict):
    type: str
    cron: str


class OnceTrigger(_Strict):
    type: str
    once: str


def validate_trigger(raw: Any, zone: ZoneInfo, now: datetime) -> dict[str, Any]:
    """The trigger as stored, or a 422 naming the part at fault. ``zone`` and
    ``now`` judge a one-shot time: it must lie in the future."""
    if not isinstance(raw, dict) or raw.get("type") not in ("time", "event"):
        raise InvalidRequest(
            "trigger must be an object with type 'time' or 'event'.", loc=["body", "trigger"]
        )
    if raw["type"] == "event":
        model: type[_Strict] = EventTrigger
    elif "every" in raw:
        model = EveryTrigger
    elif "at" in raw:
        model = AtTrigger
    elif "cron" in raw:
        model = CronTrigger
    elif "once" in raw:
        model = OnceTrigger
    else:
        raise InvalidRequest(
            "A time trigger needs 'at' (HH:MM), 'every' (e.g. 30m, 2h), 'cron'"
            " (e.g. '0 7 * * 1-5') or 'once' (e.g. 2026-12-01T09:30).",
            loc=["body", "trigger"],
        )
    clean = _model_check(model, raw)
    if model is CronTrigger:
        clean["cron"] = check_cron(clean["cron"], zone, now)
    elif model is OnceTrigger:
        clean["once"] = check_once(clean["once"], zone, now)
    return clean


def _bad(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid trigger: {field}: {message}.", loc=["body", "trigger", field])


def check_cron(expr: str, zone: ZoneInfo, now: datetime) -> str:
    """A five-field cron expression, whitespace normalised; a 422 names the
    first field croniter refuses, or says the expression never fires."""
    parts = expr.split()
    shown = f"'{expr.strip()}' is not a valid cron expression"
    if len(parts) != 5:
        raise _bad(
            "cron",
            f"{shown}: it needs 5 fields (minute hour day-of-month month day-of-week),"
            f" not {len(parts)}",
        )
    for i, (name, accepted) in enumerate(CRON_FIELDS):
        probe = ["*"] * 5
        probe[i] = parts[i]
        if not croniter.is_valid(" ".join(probe)):
            raise _bad("cron", f"{shown}: {name} must be {accepted} (got '{parts[i]}')")
    clean = " ".join(parts)
    if not croniter.is_valid(clean):
        raise _bad("cron", shown)
    if _cron_next(clean, now, zone) is None:
        raise _bad("cron", f"'{clean}' never fires (no such date)")
    return clean


def check_once(value: str, zone: ZoneInfo, now: datetime) -> str:
    """A date and time (local to ``zone`` unless it carries an offset) that
    lies in the future; stored as given."""
    value = value.strip()
    moment = None
    if _ONCE.fullmatch(value):
        try:
            moment = once_at(value, zone)
        except ValueError:
            moment = None
    if moment is None:
        raise _bad(
            "once",
            f"'{value}' is not a date and time such as 2026-12-01T09:30"
            " (local time) or 2026-12-01T09:30+01:00",
        )
    if moment <= now:
        local = moment.astimezone(zone).strftime("%Y-%m-%d %H:%M")
        raise _bad("once", f"{local} ({zone.key}) is in the past")
    return value


def once_at(value: str, zone: ZoneInfo) -> datetime:
    """The moment of a one-shot trigger: a time without an offset is in ``zone``."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


def _model_check(model: type[_Strict], raw: dict[str, Any]) -> dict[str, Any]:
    try:
        return model.model_validate(raw).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "trigger"
        raise InvalidRequest(
            f"Invalid trigger: {where}: {first['msg']}.",
            loc=["body", "trigger", *(str(p) for p in first["loc"])],
        ) from exc


def is_once(trigger: dict[str, Any]) -> bool:
    return trigger.get("type") == "time" and "once" in trigger


def interval(every: str) -> timedelta:
    n, unit = int(every[:-1]), every[-1]
    return timedelta(minutes=n) if unit == "m" else timedelta(hours=n)


def next_fire(trigger: dict[str, Any], after: datetime, zone: ZoneInfo) -> datetime | None:
    """The first fire time strictly after ``after`` (aware), or None (event
    triggers, a one-shot time already past, a cron date that never comes)."""
    if trigger["type"] == "event":
        return None
    if "every" in trigger:
        return after + interval(trigger["every"])
    if "once" in trigger:
        at = once_at(trigger["once"], zone)
        return at if at > after else None
    if "cron" in trigger:
        return _cron_next(trigger["cron"], after, zone)
    hour, minute = trigger["at"].split(":")
    days = trigger.get("days", "daily")
    dow = _NAMED.get(days) or ",".join(_CRON_DAY[d] for d in days.split(","))
    it = croniter(f"{int(minute)} {int(hour)} * * {dow}", after.astimezone(zone))
    result: datetime = it.get_next(datetime)
    return result


def _cron_next(expr: str, after: datetime, zone: ZoneInfo) -> datetime | None:
    """The next time ``expr`` matches after ``after``, in ``zone``; None when
    croniter finds none (a date that does not exist, such as 30 February)."""
    try:
        result: datetime = croniter(expr, after.astimezone(zone)).get_next(datetime)
    except CroniterBadDateError:
        return None
    return result
