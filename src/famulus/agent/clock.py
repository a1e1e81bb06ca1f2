"""The time zone the agent lives in: FAMULUS_TIMEZONE, else the machine's."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal


def zone_name(configured: str | None) -> str:
    if configured:
        try:
            ZoneInfo(configured)
            return configured
        except (ZoneInfoNotFoundError, ValueError):
            pass
    try:
        return str(tzlocal.get_localzone_name() or "UTC")
    except Exception:  # an odd machine setup must not stop a chat
        return "UTC"


def now_in(zone: str) -> datetime:
    return datetime.now(ZoneInfo(zone))


def describe_now(zone: str) -> str:
    now = now_in(zone)
    return f"{now.strftime('%A, %d %B %Y, %H:%M')} ({zone}, UTC{now.strftime('%z')})"
