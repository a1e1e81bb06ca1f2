"""Model-driven memory upkeep: extraction, consolidation, profile, dreams.

Extraction is debounced per session: each finished run (re)arms a timer that
fires when the session has been quiet for ``quiet_s`` seconds, or at once when
``after_messages`` new messages piled up. A bookmark per session (the last
message id read) keeps a conversation from being extracted twice.

A failed extraction (the model unreachable, its answer unusable) leaves the
bookmark where it was, so nothing is lost; the session's next try then waits
``failure_backoff_s``, doubling with each failure in a row up to an hour, so a
broken memory model costs one call per back-off, not one per chat turn.
"""

from __future__ import annotations

import asyncio
import logging
import random
from datetime import date, datetime
from typing import Any, Protocol

from famulus.errors import NotFound
from famulus.memory import prompts, when
from famulus.memory.service import FACT_KINDS, MemoryService
from famulus.store.memory.facts import FactRow
from famulus.store.memory.observations import ObservationRow
from famulus.store.memory.profile import ProfileRow
from famulus.store.sessions import MessageRow, SessionRow
from famulus.timeutil import parse_iso
from famulus.usage.service import BudgetExceeded
from famulus.usage.tag import tagged

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 3600.0


class SessionReader(Protocol):
    """What extraction reads of the sessions area (``SessionService`` has it),
    so memory reads conversations without reaching into the sessions' store."""

    async def find(self, session_id: str) -> SessionRow | None: ...

    async def messages(
        self, session_id: str, *, roles: tuple[str, ...] | None = None, after_id: int = 0
    ) -> list[MessageRow]: ...


class MemoryJobs:
    def __init__(
        self,
        memory: MemoryService,
        sessions: SessionReader,
        *,
        quiet_s: float,
        after_messages: int,
        failure_backoff_s: float = 60.0,
    ) -> None:
        self.memory = memory
        self.sessions = sessions
        self.quiet_s = quiet_s
        self.after_messages = after_messages
        self.failure_backoff_s = failure_backoff_s
        self._failures: dict[str, int] = {}  # session -> extractions failed in a row
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._automations: dict[str, int] = {}  # session -> the writable automation in it
        self._lock = asyncio.Lock()

    # -- scheduling ---------------------------------------------------------

    async def on_run_finished(
        self,
        session_id: str,
        run_id: str,
        *,
        read_only: bool = False,
        automation_id: int | None = None,
    ) -> None:
        """Arm extraction for the session. A read-only automation's run is never
        read: what it saw (web pages, mail) is untrusted, and it may change
        nothing, so its messages are marked as read without extraction."""
        if read_only:
            marks = self.memory.stores.extraction
            await marks.set_mark(session_id, await marks.last_message_id(session_id))
            return
        if not await self.memory.enabled():
            return
        if automation_id is not None:
            self._automations[session_id] = automation_id
        self._arm(session_id, len(await self._new_messages(session_id)))

    async def branched(self, session_id: str) -> None:
        """A branch's history is a copy: each copied message was or will be read
        in the session it came from, so the branch starts with all of it read."""
        marks = self.memory.stores.extraction
        await marks.set_mark(session_id, await marks.last_message_id(session_id))

    async def resume(self) -> None:
        """Start-up: sessions whose quiet timer was waiting when the server stopped
        (messages past their extraction mark) are armed again."""
        if not await self.memory.enabled():
            return
        for session_id in await self.memory.stores.extraction.sessions_past_mark():
            self._arm(session_id, len(await self._new_messages(session_id)))

    def _arm(self, session_id: str, pending: int) -> None:
        timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()
        delay = 0.0 if pending >= self.after_messages else self.quiet_s
        self._timers[session_id] = asyncio.create_task(
            self._later(session_id, max(delay, self._backoff(session_id)))
        )

    def _backoff(self, session_id: str) -> float:
        failures = self._failures.get(session_id, 0)
        if not failures:
            return 0.0
        return min(self.failure_backoff_s * 2 ** (failures - 1), MAX_BACKOFF_S)

    async def _later(self, session_id: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self._timers.pop(session_id, None)
        try:
            await self.extract_session(session_id)
        except BudgetExceeded as exc:
            # Paused, not failing: the messages stay unread until money is there again.
            self._failures[session_id] = self._failures.get(session_id, 0) + 1
            log.warning("memory extraction paused for session %s: %s", session_id, exc)
        except Exception:
            self._failures[session_id] = self._failures.get(session_id, 0) + 1
            log.exception(
                "memory extraction failed for session %s; the next try waits %.0f s",
                session_id,
                self._backoff(session_id),
            )
        else:
            self._failures.pop(session_id, None)

    async def stop(self) -> None:
        timers = list(self._timers.values())
        self._timers.clear()
        for t in timers:
            t.cancel()
        await asyncio.gather(*timers, return_exceptions=True)

    async def _new_messages(self, session_id: str) -> list[MessageRow]:
        mark = await self.memory.stores.extraction.mark(session_id)
        return await self.sessions.messages(session_id, roles=("user", "assistant"), after_id=mark)

    # -- extraction ---------------------------------------------------------

    async def extract_now(self, session_id: str) -> dict[str, Any]:
        """On request: extract from a session now instead of waiting for it to go quiet."""
        if await self.sessions.find(session_id) is None:
            raise NotFound(f"No session with id {session_id}.")
        return await self.extract_session(session_id)

    async def extract_session(self, session_id: str) -> dict[str, Any]:
        """Read new messages, extract facts, merge, supersede; then upkeep."""
        async with self._lock:
            messages = await self._new_messages(session_id)
            if not messages:
                return {"created": [], "merged": [], "superseded": []}
            transcript = "\n".join(f"{m.role}: {m.content}" for m in messages)[-20_000:]
            known = await self.memory.recall(transcript[-2000:], limit=20, use_time=False)
            prompt = _extraction_prompt(
                transcript, [f for f, _ in known.facts], _days(messages, self.memory.zone)
            )
            with tagged(session_id=session_id):
                result: prompts.Extraction = await prompts.run_job(
                    self.memory.llm_getter(), prompts.EXTRACT, prompts.Extraction, prompt
                )
            provenance: dict[str, Any] = {
                "session_id": session_id,
                "message_ids": [m.id for m in messages],
            }
            source = await self._source(session_id, provenance)
            said = parse_iso(messages[-1].created_at)  # the facts were said by then
            summary = await self._apply_extraction(result, session_id, provenance, source, said)
            await self.memory.stores.extraction.set_mark(session_id, messages[-1].id)
        if summary["created"]:
            await self.maintain()
        return summary

    async def _source(self, session_id: str, provenance: dict[str, Any]) -> str:
        """``automation`` (naming it in the provenance) for a writable automation's
        session, else ``chat``."""
        session = await self.sessions.find(session_id)
        if session is None or session.origin != "automation":
            return "chat"
        automation_id = self._automations.get(session_id)
        provenance["origin"] = "automation"
        if automation_id is not None:
            provenance["automation_id"] = automation_id
        return "automation"

    async def _apply_extraction(
        self,
        result: prompts.Extraction,
        session_id: str,
        provenance: dict[str, Any],
        source: str = "chat",
        said: datetime | None = None,
    ) -> dict[str, Any]:
        summary: dict[str, list[int]] = {"created": [], "merged": [], "superseded": []}
        for item in result.facts:
            if not item.text.strip():
                continue
            dup = await self.memory.find_duplicate(item.text)
            if dup is not None and not item.supersedes_fact_ids:
                await self._merge(dup, provenance)
                summary["merged"].append(dup.id)
                continue
            kind = item.kind if item.kind in FACT_KINDS else "fact"
            row = await self.memory.add_fact(
                item.text,
                kind,
                source,
                session_id,
                salience=item.salience,
                provenance={**provenance, "extracted_by": "memory_model"},
                said_at=said,
                event=_event_day(item.event_date),
            )
            summary["created"].append(row.id)
            if item.entities:
                await self.memory.stores.facts.attach_entities(
                    row.id, [(e.name.strip(), e.type.strip() or "thing") for e in item.entities]
                )
            for old_id in item.supersedes_fact_ids:
                old = await self.memory.stores.facts.get(old_id)
                if old is not None and old.archived_at is None and old.id != row.id:
                    await self.memory.supersede(old.id, row.id, "contradicted by a newer fact")
                    summary["superseded"].append(old.id)
        return summary

    async def _merge(self, fact: FactRow, provenance: dict[str, Any]) -> None:
        """A duplicate strengthens the fact it repeats instead of adding a row."""
        merged = list(fact.provenance.get("merged", []))[-19:] + [provenance]
        await self.memory.stores.facts.update(
            fact.id,
            salience=min(1.0, fact.salience + 0.1),
            provenance={**fact.provenance, "merged": merged},
        )

    # -- consolidation and profile -----------------------------------------

    async def maintain(self) -> dict[str, Any]:
        """Consolidate facts into observations and keep the profile current; then dream."""
        facts = (await self.memory.stores.facts.page(limit=150, offset=0))[0]
        if not facts:
            return {"observations": [], "profile": [], "dreams": []}
        observations = (await self.memory.stores.observations.page(100, 0))[0]
        profile = await self.memory.stores.profile.entries()
        prompt = _maintenance_prompt(facts, observations, profile)
        result: prompts.Maintenance = await prompts.run_job(
            self.memory.llm_getter(), prompts.MAINTAIN, prompts.Maintenance, prompt
        )
        known = {f.id for f in facts}
        existing = {o.summary.lower() for o in observations}
        created_obs = []
        for obs in result.observations:
            ids = [i for i in obs.fact_ids if i in known]
            if len(ids) >= 2 and obs.summary.strip().lower() not in existing:
                created_obs.append((await self.memory.add_observation(obs.summary, ids)).id)
        entries = [await self._upsert_profile(p, known, profile) for p in result.profile]
        dreams = await self.dream() if await self.memory.dreams_enabled() else []
        return {"observations": created_obs, "profile": [e for e in entries if e], "dreams": dreams}

    async def _upsert_profile(
        self, item: prompts.ProfileOut, known: set[int], profile: list[ProfileRow]
    ) -> int | None:
        ids = [i for i in item.source_fact_ids if i in known]
        current = {e.id: e for e in profile}
        if item.replaces_entry_id is not None and item.replaces_entry_id in current:
            await self.memory.stores.profile.update(
                item.replaces_entry_id,
                summary=item.summary,
                source_fact_ids=ids,
                confidence=item.confidence,
            )
            return item.replaces_entry_id
        if any(e.summary.lower() == item.summary.lower() for e in profile):
            return None
        row = await self.memory.stores.profile.insert(
            item.kind, item.summary, ids, [], item.confidence
        )
        return row.id

    # -- dreams -------------------------------------------------------------

    async def dream(self) -> list[int]:
        """Links between distant facts; only while the dreams flag is on."""
        if not await self.memory.dreams_enabled():
            return []
        facts = await self.memory.stores.facts.active(limit=500)
        if len(facts) < 2:
            return []
        sample = random.sample(facts, min(12, len(facts)))
        result: prompts.Dreams = await prompts.run_job(
            self.memory.llm_getter(),
            prompts.DREAM,
            prompts.Dreams,
            "\n".join(f"#{f.id}: {f.text}" for f in sample),
        )
        known = {f.id for f in facts}
        created = []
        for d in result.dreams:
            ids = [i for i in d.fact_ids if i in known]
            if len(ids) < 2:
                continue
            row = await self.memory.stores.profile.insert_dream(d.bridge, d.insight, ids)
            for a, b in zip(ids, ids[1:], strict=False):
                await self.memory.stores.facts.add_link(a, b, "dream", 0.5)
            created.append(row.id)
        return created


def _extraction_prompt(transcript: str, known: list[FactRow], days: str = "") -> str:
    facts = "\n".join(f"#{f.id}: {f.text}" for f in known) or "(none)"
    held = f"The conversation took place on {days}.\n\n" if days else ""
    return f"Known facts:\n{facts}\n\n{held}Conversation:\n{transcript}"


def _days(messages: list[MessageRow], zone: str) -> str:
    """The day (or first and last day) of the messages, in the person's zone: what
    the memory model resolves "last Tuesday" against."""
    first, last = (
        when.local(parse_iso(m.created_at), zone).date().isoformat()
        for m in (messages[0], messages[-1])
    )
    return first if first == last else f"{first} to {last}"


def _event_day(value: str | None) -> when.TimeRange | None:
    """The extraction's event date as a one-day range (None if absent or not a date)."""
    try:
        day = date.fromisoformat((value or "").strip())
    except ValueError:
        return None
    if not when.FIRST_DAY <= day <= when.LAST_DAY:  # a slip, or a conversation's trick
        return None
    return when.TimeRange(day, day, value or "")


def _maintenance_prompt(
    facts: list[FactRow], observations: list[ObservationRow], profile: list[ProfileRow]
) -> str:
    return (
        "Facts:\n"
        + "\n".join(f"#{f.id} [{f.kind}]: {f.text}" for f in facts)
        + "\n\nExisting observations:\n"
        + ("\n".join(f"- {o.summary}" for o in observations) or "(none)")
        + "\n\nProfile entries:\n"
        + ("\n".join(f"#{e.id} [{e.kind}]: {e.summary}" for e in profile) or "(none)")
    )
