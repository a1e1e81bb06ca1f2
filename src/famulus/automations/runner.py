"""Runs one automation: its description becomes a task for the agent.

The run goes through the same RunManager as chat, in the automation's own
session, so it gets memory, tools, history and events for free. Nobody is
there to approve a write: a writable automation runs with approvals skipped;
a read-only one has every approval request denied with the reason, so the
agent learns it may not change anything.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from famulus.chat.manager import ChatInput, RunManager
from famulus.events import EventHub

READ_ONLY = "This automation is not writable; it may not modify data. Continue without this action."
TIMEOUT_S = 600.0


@dataclass
class Outcome:
    status: str  # ok | error | cancelled
    result: str
    run_id: str | None


async def execute(
    events: EventHub,
    chat: RunManager,
    session_id: str,
    task: str,
    writable: bool,
    automation_id: int | None = None,
) -> Outcome:
    sub = events.subscribe(session_id)
    try:
        submitted = await chat.submit(
            ChatInput(
                task,
                session_id,
                skip_approvals=writable,
                origin="automation",
                read_only=not writable,
                automation_id=automation_id,
            )
        )
        return await asyncio.wait_for(_follow(chat, sub.queue, submitted.run_id), TIMEOUT_S)
    except TimeoutError:
        await chat.cancel(None, session_id)
        return Outcome(
            "error", "The automation took longer than 10 minutes and was cancelled.", None
        )
    except Exception as exc:  # a run that cannot start (no model …) is a failed run
        detail = getattr(exc, "detail", None) or str(exc) or type(exc).__name__
        return Outcome("error", detail, None)
    finally:
        events.unsubscribe(session_id, sub)


async def _follow(chat: RunManager, queue: asyncio.Queue[Any], run_id: str) -> Outcome:
    texts: list[str] = []
    while True:
        event = await queue.get()
        data = event.data
        if data.get("run_id") not in (None, run_id):
            continue
        kind = event.type
        if kind == "text" and data.get("depth", 0) == 0:
            texts.append(str(data.get("content", "")))
        elif kind == "approval_needed":
            await chat.answer(run_id, data["tool_id"], False, READ_ONLY)
        elif kind == "run_finished":
            return Outcome("ok", "\n\n".join(t for t in texts if t).strip(), run_id)
        elif kind == "run_error":
            return Outcome("error", str(data.get("message", "The run failed.")), run_id)
        elif kind == "run_cancelled":
            return Outcome("cancelled", "The run was cancelled.", run_id)
