"""The delivery queue: notifier deliveries that survive failures and restarts.

Each delivery is a row (``store/deliveries.py``) written together with the
run's result. A try that fails for a passing reason (no connection, 408, 429,
5xx, a 4xx SMTP reply) schedules the next one after the policy's wait (longer
if the receiver sent Retry-After, up to a cap); any other failure, or running
out of tries, makes it final. A background loop sleeps until the earliest due
row (or until woken) and tries every due row, so rows left pending by a crash
are picked up at start-up. Every try's outcome is told to the listeners (the
automation service shows it with the run).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from famulus.errors import FamulusError
from famulus.notify.senders import DeliveryError
from famulus.store.deliveries import DeliveryRow, DeliveryStore
from famulus.timeutil import iso, parse_iso, utcnow

log = logging.getLogger(__name__)

Send = Callable[[str, str, str], Awaitable[None]]  # (notifier, title, text)
Listener = Callable[[DeliveryRow], Awaitable[None]]
# The loop looks at the table at least this often even when nothing woke it.
IDLE_S = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    """``delays_s[n]``: the wait after the (n+1)-th failed try; so there are
    ``len(delays_s) + 1`` tries in all."""

    delays_s: tuple[float, ...] = (30.0, 90.0, 180.0)
    retry_after_max_s: float = 600.0

    @property
    def tries(self) -> int:
        return len(self.delays_s) + 1

    def wait_after(self, failed_tries: int, retry_after: float | None) -> float | None:
        """Seconds until the next try, or None when no try is left."""
        if failed_tries > len(self.delays_s):
            return None
        wait = self.delays_s[failed_tries - 1]
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.retry_after_max_s))
        return wait


def _verdict(exc: Exception) -> tuple[str, bool, float | None]:
    """(reason, retryable, retry_after) of a failed send."""
    if isinstance(exc, DeliveryError):
        return exc.detail, exc.retryable, exc.retry_after
    if isinstance(exc, FamulusError):  # unknown notifier, channel not configured
        return exc.detail, False, None
    log.exception("notifier delivery failed unexpectedly", exc_info=exc)
    return f"Delivery failed: {type(exc).__name__}.", True, None


class DeliveryQueue:
    def __init__(self, store: DeliveryStore, send: Send, policy: RetryPolicy) -> None:
        self.store = store
        self.send = send
        self.policy = policy
        self.listeners: list[Listener] = []
        self._inflight: set[int] = set()
        self._tasks: set[asyncio.Task[DeliveryRow | None]] = set()
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None

    async def attempt(self, delivery_id: int) -> DeliveryRow | None:
        """Try one delivery now if it is due and nobody else is trying it;
        record the outcome and tell the listeners. The row after the try, or
        None when there was nothing to do."""
        if delivery_id in self._inflight:
            return None
        self._inflight.add(delivery_id)
        try:
            row = await self.store.get(delivery_id)
            if row is None or row.next_attempt_at is None or not self._due(row.next_attempt_at):
                return None
            updated = await self._try(row)
        finally:
            self._inflight.discard(delivery_id)
            self._wake.set()  # the next due time may have changed
        if updated is not None:
            await self._tell(updated)
        return updated

    async def _try(self, row: DeliveryRow) -> DeliveryRow | None:
        try:
            await self.send(row.notifier, row.title, row.text)
        except Exception as exc:  # every failure is recorded, none stops the queue
            reason, retryable, retry_after = _verdict(exc)
            wait = self.policy.wait_after(row.attempts + 1, retry_after) if retryable else None
            nxt = iso(utcnow() + timedelta(seconds=wait)) if wait is not None else None
            return await self.store.record(row.id, reason, nxt)
        return await self.store.record(row.id, None, None)

    async def _tell(self, row: DeliveryRow) -> None:
        for listener in self.listeners:
            try:
                await listener(row)
            except Exception:
                log.exception("a delivery listener failed")

    @staticmethod
    def _due(at: str) -> bool:
        return parse_iso(at) <= utcnow()

    # -- the background loop -------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop trying; a try cut short stays due and is made after restart."""
        tasks = [t for t in [self._loop, *self._tasks] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                sleep = await self._pass()
            except Exception:
                log.exception("delivery queue pass failed")
                sleep = IDLE_S
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=sleep)
            except TimeoutError:
                pass

    async def _pass(self) -> float:
        """Start a try for every due delivery; seconds until the next is due."""
        now = utcnow()
        sleep = IDLE_S
        for delivery_id, at in await self.store.waiting():
            if delivery_id in self._inflight:
                continue
            wait = (parse_iso(at) - now).total_seconds()
            if wait <= 0:
                task = asyncio.create_task(self.attempt(delivery_id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            else:
                sleep = min(sleep, wait)
        return sleep


def policy_from(delays: Sequence[float], retry_after_max: float) -> RetryPolicy:
    return RetryPolicy(tuple(float(d) for d in delays), float(retry_after_max))
