"""Automation triggers for tests that must never fire on their own.

A fixed time such as "07:30" fires while the suite runs once a day, and the
scheduler's run then collides with the test's manual one. Twelve hours from
now in the machine's zone (the server's default zone) is never close.
"""

from __future__ import annotations

from datetime import datetime, timedelta


def far_time() -> str:
    return (datetime.now().astimezone() + timedelta(hours=12)).strftime("%H:%M")


def never_soon() -> dict[str, str]:
    """A daily trigger twelve hours away."""
    return {"type": "time", "at": far_time()}
