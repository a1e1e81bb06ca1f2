"""How a re-index or the start-up backfill tells the world how far it got.

The memory area publishes through ``ProgressSink``, a port wiring fills with
the memory feed (``famulus.feed.Feed``) that ``GET /memory/events`` streams;
memory itself never knows HTTP. Each run sends ``<kind>_started``, then
``<kind>_progress`` after its batches, then ``<kind>_finished``. Progress is
throttled (at most one every ``PROGRESS_EVERY_S``) so a re-index of 100 000
rows does not flood a client, yet a run that completes always sends a last
progress with ``done`` at its final count before it finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from famulus.memory.vectors import ReindexState

PROGRESS_EVERY_S = 0.25
REINDEX, BACKFILL = "reindex", "backfill"


class ProgressSink(Protocol):
    def publish(self, type_: str, /, **fields: Any) -> None:
        """Hand one event on to whoever listens (never blocks, never raises)."""


class Unheard:
    """The sink until wiring puts the memory feed in (benchmarks, bare services)."""

    def publish(self, type_: str, /, **fields: Any) -> None:
        return None


def progress_event(kind: str, state: ReindexState) -> dict[str, Any]:
    """The ``<kind>_progress`` event for ``state`` as it stands."""
    return {
        "type": f"{kind}_progress",
        "embedding_model": state.model,
        "done": state.done,
        "total": state.total,
    }


class Progress:
    """Counts one run's work in its ``ReindexState`` and reports it to a sink."""

    def __init__(
        self,
        sink: ProgressSink,
        kind: str,
        state: ReindexState,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sink = sink
        self.kind = kind
        self.state = state
        self._clock = clock
        self._sent_at: float | None = None
        self._sent_done: int | None = None

    def started(self) -> None:
        self.sink.publish(
            f"{self.kind}_started", embedding_model=self.state.model, total=self.state.total
        )

    def advanced(self, rows: int) -> None:
        """A batch of ``rows`` is embedded; tell it unless the last report is too recent."""
        self.state.done += rows
        now = self._clock()
        recent = self._sent_at is not None and now - self._sent_at < PROGRESS_EVERY_S
        sent = -1 if self._sent_done is None else self._sent_done
        if not recent or self.state.done >= self.state.total > sent:  # always the last batch
            self._send(now)

    def finished(self) -> None:
        """Report the end; the state's ``status`` (and ``error``) are already set."""
        state = self.state
        if state.status == "completed" and self._sent_done != state.done:
            self._send(self._clock())
        fields: dict[str, Any] = {
            "embedding_model": state.model,
            "status": state.status,
            "done": state.done,
            "total": state.total,
        }
        if state.error:
            fields["error"] = state.error
        self.sink.publish(f"{self.kind}_finished", **fields)

    def _send(self, now: float) -> None:
        event = progress_event(self.kind, self.state)
        self.sink.publish(event.pop("type"), **event)
        self._sent_at, self._sent_done = now, self.state.done


def under_way(*runs: tuple[str, ReindexState]) -> list[dict[str, Any]]:
    """What a subscriber joining now must see first: the progress of each run
    still going, so it is not blind until the next batch."""
    return [progress_event(kind, state) for kind, state in runs if state.status == "running"]
