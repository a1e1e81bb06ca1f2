"""Trigger validation and fire-time arithmetic.

Daily/weekday schedules become a cron expression handed to croniter, so
calendar arithmetic (month ends, DST) is the library's, not ours. Times are in
the server's configured zone.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from famulus.errors import InvalidRequest

DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_NAMED = {"daily": "*", "weekdays": "1-5", "weekends": "6,0"}
_CRON_DAY = {"mon": "1", "tue": "2", "wed": "3", "thu": "4", "fri": "5", "sat": "6", "sun": "0"}


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


def validate_trigger(raw: Any) -> dict[str, Any]:
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
    else:
        raise InvalidRequest(
            "A time trigger needs 'at' (HH:MM) or 'every' (e.g. 30m, 2h).", loc=["body", "trigger"]
        )
    try:
        return model.model_validate(raw).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "trigger"
        raise InvalidRequest(
            f"Invalid trigger: {where}: {first['msg']}.",
            loc=["body", "trigger", *(str(p) for p in first["loc"])],
        ) from exc


def interval(every: str) -> timedelta:
    n, unit = int(every[:-1]), every[-1]
    return timedelta(minutes=n) if unit == "m" else timedelta(hours=n)


def next_fire(trigger: dict[str, Any], after: datetime, zone: ZoneInfo) -> datetime | None:
    """The first fire time strictly after ``after`` (aware), or None (event triggers)."""
    if trigger["type"] == "event":
        return None
    if "every" in trigger:
        return after + interval(trigger["every"])
    hour, minute = trigger["at"].split(":")
    days = trigger.get("days", "daily")
    dow = _NAMED.get(days) or ",".join(_CRON_DAY[d] for d in days.split(","))
    it = croniter(f"{int(minute)} {int(hour)} * * {dow}", after.astimezone(zone))
    result: datetime = it.get_next(datetime)
    return result
