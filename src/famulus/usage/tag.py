"""Who a model request is made for, without threading it through every caller.

Whoever starts model work (a chat run, the research tool, a memory job,
compaction) sets the tag; the metered model (``usage.model``) reads it when it
records a request. Being a context variable, it is inherited by every task
pydantic-ai starts under the run, so the research sub-agent only has to change
the source.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

SOURCES = ("chat", "research", "memory", "compaction", "automation", "skill")


@dataclass(frozen=True)
class UsageTag:
    source: str = "chat"
    session_id: str | None = None
    run_id: str | None = None
    automation_id: int | None = None


_current: ContextVar[UsageTag | None] = ContextVar("famulus_usage_tag", default=None)


def current() -> UsageTag:
    return _current.get() or UsageTag()


@contextmanager
def tagged(**changes: Any) -> Iterator[UsageTag]:
    """Requests inside the ``with`` carry the current tag with ``changes`` applied."""
    tag = replace(current(), **changes)
    token = _current.set(tag)
    try:
        yield tag
    finally:
        _current.reset(token)
