"""What a tool may need to know about the run it serves, without taking a context.

Tools live in many areas and most are plain functions; threading a
``RunContext`` through each just to learn "is this a read-only automation?"
or to report "I drew on the mail" would couple them all to the agent loop.
A context variable set by the run is inherited by every task pydantic-ai
starts for tools, including the research sub-agent's, so a tool anywhere in
the run can ask and report.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class RunScope:
    origin: str = "chat"  # "chat" or "automation"
    read_only: bool = False  # an automation that may not modify data
    automation_id: int | None = None  # the automation this run works for
    session_id: str | None = None  # the session the run answers in
    sources: list[str] = field(default_factory=list)  # used, not yet recorded

    def take_sources(self) -> list[str]:
        taken, self.sources = self.sources, []
        return taken


_current: ContextVar[RunScope | None] = ContextVar("famulus_run_scope", default=None)

READ_ONLY_REFUSAL = (
    "Not done: this automation is not writable, so it may not modify data. "
    "Continue without this action."
)


def current() -> RunScope | None:
    return _current.get()


def read_only() -> bool:
    scope = _current.get()
    return scope is not None and scope.read_only


def origin() -> str:
    scope = _current.get()
    return scope.origin if scope is not None else "chat"


def session_id() -> str | None:
    """The session of the run in progress (None outside a run)."""
    scope = _current.get()
    return scope.session_id if scope is not None else None


def used(source: str) -> None:
    """A tool drew on ``source`` successfully; the session's ``sources`` will name it."""
    scope = _current.get()
    if scope is not None and source not in scope.sources:
        scope.sources.append(source)


@contextmanager
def running(scope: RunScope) -> Iterator[RunScope]:
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
