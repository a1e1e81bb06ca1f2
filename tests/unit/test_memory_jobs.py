"""Extraction scheduling: a failing memory model is retried with back-off, not on
every chat turn (each try is a model call the person pays for)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from famulus.memory.jobs import MemoryJobs


def _jobs(calls: list[float], fail: list[bool]) -> MemoryJobs:
    jobs = MemoryJobs(None, None, quiet_s=60.0, after_messages=1, failure_backoff_s=0.3)  # type: ignore[arg-type]

    async def extract(session_id: str) -> dict[str, Any]:
        calls.append(time.monotonic())
        if fail[0]:
            raise RuntimeError("the memory model answered something unusable")
        return {"created": [], "merged": [], "superseded": []}

    jobs.extract_session = extract  # type: ignore[method-assign]
    return jobs


async def _until(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_failed_extraction_waits_before_the_next_try() -> None:
    calls: list[float] = []
    fail = [True]
    jobs = _jobs(calls, fail)
    jobs._arm("s", pending=5)  # enough new messages: at once
    await _until(lambda: len(calls) == 1)
    await asyncio.sleep(0.05)
    jobs._arm("s", pending=6)  # the next turn: would be at once, waits the back-off
    await asyncio.sleep(0.15)
    assert len(calls) == 1
    await _until(lambda: len(calls) == 2)
    assert calls[1] - calls[0] >= 0.3
    await asyncio.sleep(0.05)
    jobs._arm("s", pending=7)  # two failures in a row: twice as long
    await asyncio.sleep(0.45)
    assert len(calls) == 2
    await _until(lambda: len(calls) == 3)
    fail[0] = False
    await asyncio.sleep(0.05)
    jobs._arm("s", pending=8)  # three failures: 1.2 s, then it succeeds
    await _until(lambda: len(calls) == 4, timeout=3.0)
    assert calls[3] - calls[2] >= 1.2
    await asyncio.sleep(0.05)
    jobs._arm("s", pending=9)  # the success cleared the failures: at once again
    await _until(lambda: len(calls) == 5, timeout=0.3)
    await jobs.stop()


async def test_sessions_back_off_on_their_own() -> None:
    calls: list[float] = []
    jobs = _jobs(calls, [True])
    jobs._arm("a", pending=5)
    await _until(lambda: len(calls) == 1)
    await asyncio.sleep(0.05)
    jobs._arm("b", pending=5)  # another session is not held back by a's failure
    await _until(lambda: len(calls) == 2, timeout=0.2)
    await jobs.stop()
