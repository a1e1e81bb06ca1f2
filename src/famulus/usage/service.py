"""The usage ledger's keeper: records requests, sums them, enforces budgets.

Budgets are USD caps on the known cost of model requests: a daily and a
monthly one (``FAMULUS_BUDGET_DAILY`` / ``FAMULUS_BUDGET_MONTHLY``, overridden
by ``PATCH /config``) and one per automation (its ``budget``, USD a day). Days
and months are the person's (``FAMULUS_TIMEZONE``). Before each request the
spend so far is compared with each cap; a cap already reached stops the
request with ``BudgetExceeded`` (a run ends with a ``run_error`` saying which
cap and how to raise it; memory jobs back off). Requests of unknown price
count as nothing. When a request takes the spend past 80 % of a cap, one
notice per cap and period goes out (``on_notice``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from pydantic_ai.usage import RequestUsage

from famulus import config_keys
from famulus.agent.clock import zone_name
from famulus.errors import Conflict
from famulus.events import EventHub
from famulus.llm.types import ResolvedModel
from famulus.settings import Settings
from famulus.store.kv import KVStore
from famulus.store.usage import UsageEntry, UsageStore
from famulus.timeutil import iso, utcnow
from famulus.usage import pricing, tag
from famulus.usage.report import usage_report
from famulus.usage.tag import UsageTag

log = logging.getLogger(__name__)

NOTICE_SHARE = 0.8
_UNSET = "unset"  # the kv default that tells "never set" from "set to null (no cap)"

Notice = Callable[[str, UsageTag], Awaitable[None]]


async def budget_in_force(kv: KVStore, settings: Settings, name: str) -> float | None:
    """The daily or monthly cap in force: PATCH /config's choice (a number, or
    null for none), else the setting."""
    key = config_keys.BUDGET_DAILY if name == "daily" else config_keys.BUDGET_MONTHLY
    chosen = await kv.get(key, _UNSET)
    if chosen != _UNSET:
        return None if chosen is None else float(chosen)
    return settings.budget_daily if name == "daily" else settings.budget_monthly


class BudgetExceeded(Conflict):
    """A cap is reached; the message says which one and how to raise it.

    A 409 where a request waits on it directly (POST /compact, POST
    /memory/extract); a run turns it into its run_error."""


@dataclass(frozen=True)
class Cap:
    name: str  # daily | monthly | automation
    limit: float
    since: datetime  # the start of the cap's period (UTC)
    period: str  # the period's label, for the once-per-period notice


class UsageService:
    def __init__(self, store: UsageStore, kv: KVStore, settings: Settings) -> None:
        self.store = store
        self.kv = kv
        self.settings = settings
        self.zone = ZoneInfo(zone_name(settings.timezone))
        self.on_notice: Notice | None = None  # wiring sets where the 80 % notice goes

    # -- budgets --------------------------------------------------------------

    async def budget(self, name: str) -> float | None:
        return await budget_in_force(self.kv, self.settings, name)

    async def caps(self, t: UsageTag, now: datetime | None = None) -> list[Cap]:
        local = (now or utcnow()).astimezone(self.zone)
        day = local.replace(hour=0, minute=0, second=0, microsecond=0)
        month = day.replace(day=1)
        found: list[Cap] = []
        daily, monthly = await self.budget("daily"), await self.budget("monthly")
        if daily is not None:
            found.append(Cap("daily", daily, day, day.date().isoformat()))
        if monthly is not None:
            found.append(Cap("monthly", monthly, month, month.strftime("%Y-%m")))
        own = (
            None if t.automation_id is None else await self.store.automation_budget(t.automation_id)
        )
        if own is not None:
            found.append(Cap("automation", own, day, day.date().isoformat()))
        return found

    async def spent(self, cap: Cap, t: UsageTag) -> float:
        only = t.automation_id if cap.name == "automation" else None
        return await self.store.spent(iso(cap.since), automation_id=only)

    async def before_request(self) -> None:
        t = tag.current()
        for cap in await self.caps(t):
            spent = await self.spent(cap, t)
            if spent >= cap.limit:
                raise BudgetExceeded(exceeded_message(cap, spent, t.automation_id))

    # -- the ledger -----------------------------------------------------------

    async def record(
        self,
        resolved: ResolvedModel,
        usage: RequestUsage,
        details: dict[str, Any] | None,
        estimated_input: int | None,
    ) -> None:
        t = tag.current()
        cost, priced_by = pricing.price(resolved, usage, details)
        await self.store.add(
            UsageEntry(
                ts=iso(utcnow()),
                source=t.source,
                session_id=t.session_id,
                run_id=t.run_id,
                automation_id=t.automation_id,
                provider=resolved.provider,
                model=resolved.model_id,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost=cost,
                priced_by=priced_by,
                estimated_input=estimated_input,
            )
        )
        if cost:
            await self._maybe_notice(t)

    async def run_cost(self, run_id: str) -> float | None:
        return await self.store.run_cost(run_id)

    async def context_scale(self, session_id: str) -> float | None:
        """How far the provider's count of the session's last main-agent request
        was from our estimate of it (reported / estimated); None when unknown.

        The estimate counts about 4 characters a token, which is about 4× too
        low for Chinese or Japanese text; scaling by what the provider reported
        for the same session makes GET /context and the automatic compaction
        trigger follow the provider's own count, while what changed since that
        request (new messages, a compaction) is still taken into account.
        """
        last = await self.store.last_request(session_id, ("chat", "automation"))
        if last is None or not last.input_tokens or not last.estimated_input:
            return None
        return last.input_tokens / last.estimated_input

    async def report(self, start: str | None, end: str | None, group_by: str) -> dict[str, Any]:
        """GET /usage's body (``usage.report`` says how the range is read)."""
        return await usage_report(self.store.sums, self.zone, start, end, group_by)

    async def _maybe_notice(self, t: UsageTag) -> None:
        """One notice per cap and period once the spend passes 80 % of it."""
        for cap in await self.caps(t):
            spent = await self.spent(cap, t)
            if spent < NOTICE_SHARE * cap.limit:
                continue
            key = config_keys.BUDGET_NOTICE_PREFIX + cap.name
            if cap.name == "automation":
                key += f".{t.automation_id}"
            if await self.kv.get(key) == cap.period:
                continue
            await self.kv.set(key, cap.period)
            text = notice_message(cap, spent, t.automation_id)
            log.warning("%s", text)
            if self.on_notice is not None:
                try:
                    await self.on_notice(text, t)
                except Exception:  # a failed notice must not fail the request
                    log.exception("the budget notice could not be delivered")


def money(value: float) -> str:
    """Cents, or more digits for amounts below a cent (a test cap, one cheap request)."""
    if value == 0 or value >= 0.01:
        return f"${value:,.2f}"
    return "$" + f"{value:.6f}".rstrip("0")


_HOW = {
    "daily": ('PATCH /config {"budget_daily": …}', "today", "tomorrow"),
    "monthly": ('PATCH /config {"budget_monthly": …}', "this month", "next month"),
    "automation": ('PATCH /automations/{id} {"budget": …}', "today", "tomorrow"),
}


def _which(cap: Cap, automation_id: int | None) -> str:
    if cap.name == "automation":
        return f"automation {automation_id}'s daily budget"
    return f"{cap.name} budget"


def exceeded_message(cap: Cap, spent: float, automation_id: int | None) -> str:
    how, when, wait = _HOW[cap.name]
    how = how.replace("{id}", str(automation_id))
    return (
        f"The {_which(cap, automation_id)} of {money(cap.limit)} is used up"
        f" ({money(spent)} spent {when}); raise it with {how} or wait until {wait}."
    )


def notice_message(cap: Cap, spent: float, automation_id: int | None) -> str:
    how, when, _ = _HOW[cap.name]
    how = how.replace("{id}", str(automation_id))
    share = round(100 * spent / cap.limit)
    return (
        f"famulus has used {share} % of the {_which(cap, automation_id)} of"
        f" {money(cap.limit)} ({money(spent)} spent {when}); at the cap model requests stop."
        f" Raise it with {how}."
    )


class DefaultNotifier(Protocol):
    """The notifiers' side the 80 % notice needs (the notify area implements it)."""

    async def default_name(self) -> str | None: ...

    async def send(self, name: str, title: str, text: str) -> None: ...


def budget_notice(events: EventHub, notifiers: DefaultNotifier) -> Notice:
    """A budget notice goes to the person's default notifier (when one is set) and
    is a ``budget_notice`` event in the session whose request crossed 80 %."""

    async def notice(text: str, t: UsageTag) -> None:
        if t.session_id is not None:
            await events.publish(t.session_id, "budget_notice", message=text)
        name = await notifiers.default_name()
        if name is not None:
            await notifiers.send(name, "famulus budget", text)

    return notice
