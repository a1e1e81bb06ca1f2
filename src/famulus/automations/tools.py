"""The agent's ``schedule`` tool: "remind me in 20 minutes to call Anna" and
"every weekday at 7 send me the weather" become automations.

One tool covers both, because the model only has to decide two things: when
(exactly one of a delay in minutes, a local date and time, or a cron
expression) and what (a fixed reminder text, or a task for the agent to carry
out then). A reminder becomes a ``reminder`` automation, whose run sends
``Reminder: <text>`` without asking a model; a task becomes an ordinary
read-only automation. Either is delivered by the notifier the person names,
else their default one (``PATCH /config {"default_notifier"}``).

It creates something that acts later in the person's name, so it asks first
(``requires_approval``); a read-only automation may not use it. A delay is
counted from when the tool runs, i.e. after the approval.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic_ai.toolsets import FunctionToolset

from famulus.agent import scope
from famulus.agent.outcome import failure
from famulus.automations.service import REMINDER, TASK, AutomationService
from famulus.automations.triggers import next_fire
from famulus.errors import FamulusError
from famulus.notify.service import NotifierService
from famulus.timeutil import utcnow

MAX_MINUTES = 366 * 24 * 60
NAME_CHARS = 80


def schedule_toolset(
    automations: AutomationService, notifiers: NotifierService
) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset(id="automations-schedule")

    async def schedule(
        task: str,
        in_minutes: int | None = None,
        at: str | None = None,
        cron: str | None = None,
        reminder: bool = False,
        notifier: str | None = None,
        name: str | None = None,
    ) -> str:
        """Schedule a reminder or a task for the person (asks the person first).

        Give exactly one of in_minutes, at or cron; times are in the person's time zone.

        Args:
            task: for a reminder, what to remind of ("call Anna"); otherwise the
                instruction to carry out each time ("Send me today's weather for Berlin").
            in_minutes: once, this many minutes from now.
            at: once, at this local date and time, e.g. 2026-12-01T09:30.
            cron: repeatedly, a 5-field cron expression, e.g. "0 7 * * 1-5" (weekdays 07:00).
            reminder: true to just send "Reminder: <task>" then; false to have the
                assistant do the task then and send its answer.
            notifier: the notifier to deliver through; default: the person's default one.
            name: a short name for it; default: taken from the task.
        """
        if scope.read_only():
            return failure(scope.READ_ONLY_REFUSAL)
        text = _one_line(task)
        if not text:
            return failure("Not scheduled: say what to remind of or what to do.")
        try:
            trigger = _trigger(in_minutes, at, cron, automations)
            target = await _notifier(notifiers, notifier)
        except _Refused as exc:
            return failure(f"Not scheduled: {exc}")
        description = _reminder_text(text) if reminder else task.strip()
        fields = {
            "name": _one_line(name or "")[:200] or (description if reminder else text)[:NAME_CHARS],
            "kind": REMINDER if reminder else TASK,
            "description": description,
            "trigger": trigger,
            "notifiers": [target],
        }
        try:
            row = await automations.create(fields)
        except FamulusError as exc:
            return failure(f"Not scheduled: {exc.detail}")
        return _confirmation(row.id, row.name, trigger, target, automations)

    toolset.add_function(schedule, requires_approval=True)
    return toolset


class _Refused(Exception):
    """The model's arguments cannot be scheduled; the message says why."""


def _trigger(
    in_minutes: int | None, at: str | None, cron: str | None, automations: AutomationService
) -> dict[str, Any]:
    given = [v for v in (in_minutes, at, cron) if v not in (None, "")]
    if len(given) != 1:
        raise _Refused("give exactly one of in_minutes, at or cron.")
    if cron:
        return {"type": "time", "cron": cron}
    if at:
        return {"type": "time", "once": at}
    assert in_minutes is not None
    if not 1 <= in_minutes <= MAX_MINUTES:
        raise _Refused(f"in_minutes must be 1-{MAX_MINUTES}.")
    moment = (utcnow() + timedelta(minutes=in_minutes)).astimezone(automations.zone)
    return {"type": "time", "once": moment.replace(microsecond=0).isoformat()}


async def _notifier(notifiers: NotifierService, named: str | None) -> str:
    known = [r.name for r in await notifiers.all()]
    listed = ", ".join(known) or "none"
    if named:
        if named not in known:
            raise _Refused(f"there is no notifier named '{named}' (known: {listed}).")
        return named
    default = await notifiers.default_name()
    if default is None:
        raise _Refused(
            f"the person has no default notifier; ask which one to use (known: {listed})"
            " and pass it as notifier, or have them set one with"
            ' PATCH /config {"default_notifier": "<name>"}.'
        )
    return default


def _reminder_text(text: str) -> str:
    return text if text.lower().startswith("reminder:") else f"Reminder: {text}"


def _one_line(text: str) -> str:
    """Printable characters only, whitespace runs collapsed (names allow no
    control characters)."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def _confirmation(
    automation_id: int,
    name: str,
    trigger: dict[str, Any],
    notifier: str,
    automations: AutomationService,
) -> str:
    zone = automations.zone
    first = next_fire(trigger, utcnow(), zone)
    when = first.astimezone(zone).strftime("%Y-%m-%d %H:%M") if first else "never"
    how = f"cron '{trigger['cron']}'" if "cron" in trigger else "once"
    return (
        f"Scheduled automation {automation_id} '{name}' ({how}; first at {when} {zone.key}),"
        f" delivered via the notifier '{notifier}'."
    )
