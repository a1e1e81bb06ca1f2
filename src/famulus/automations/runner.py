"""Runs one automation: its description becomes a task for the agent.

The run goes through the same RunManager as chat, in the automation's own
session, so it gets memory, tools, history and events for free. Nobody is
there to approve a write: a writable automation runs with approvals skipped;
a read-only one has every approval request denied with the reason, so the
agent learns it may not change anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from famulus.chat.follow import ask
from famulus.chat.manager import ChatInput, RunManager
from famulus.events import Event, EventHub

READ_ONLY = "This automation is not writable; it may not modify data. Continue without this action."
TIMEOUT_S = 600.0


@dataclass
class Outcome:
    status: str  # ok | error | cancelled
    result: str
    run_id: str | None
    usage: dict[str, Any] = field(default_factory=dict)  # run_finished's, when it came


async def execute(
    events: EventHub,
    chat: RunManager,
    session_id: str,
    task: str,
    writable: bool,
    automation_id: int | None = None,
) -> Outcome:
    inp = ChatInput(
        task,
        session_id,
        skip_approvals=writable,
        origin="automation",
        read_only=not writable,
        automation_id=automation_id,
    )

    async def deny(run_id: str, event: Event) -> None:
        await chat.answer(run_id, event.data["tool_id"], False, READ_ONLY)

    try:
        run_id, answer = await ask(events, chat, inp, TIMEOUT_S, on_approval=deny)
    except Exception as exc:  # a run that cannot start (no model …) is a failed run
        detail = getattr(exc, "detail", None) or str(exc) or type(exc).__name__
        return Outcome("error", detail, None)
    if answer.status == "ok":
        return Outcome("ok", answer.text, run_id, answer.usage)
    if answer.status == "cancelled":
        return Outcome("cancelled", "The run was cancelled.", run_id)
    if answer.status == "timeout":
        return Outcome(
            "error", "The automation took longer than 10 minutes and was cancelled.", None
        )
    return Outcome("error", answer.error or "The run failed.", run_id)
