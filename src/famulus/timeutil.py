"""Timestamps: ISO 8601 in UTC with a ``Z`` suffix, everywhere."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    # Not strftime: its %Y writes year 500 as "500", which sorts after "2026"
    # as text (stored timestamps are compared as text).
    return dt.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def now_iso() -> str:
    return iso(utcnow())


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
