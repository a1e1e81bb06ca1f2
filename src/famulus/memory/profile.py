"""Profile entries and dreams: validation, and the rows with their sources."""

from __future__ import annotations

from dataclasses import dataclass

from famulus.errors import InvalidRequest, NotFound
from famulus.memory.service import MemoryService
from famulus.store.memory.facts import FactRow
from famulus.store.memory.observations import ObservationRow
from famulus.store.memory.profile import DreamRow, ProfileRow
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class EntryDetail:
    entry: ProfileRow
    source_facts: list[FactRow]
    source_observations: list[ObservationRow]


@dataclass(frozen=True)
class DreamDetail:
    dream: DreamRow
    source_facts: list[FactRow]


async def _check_facts(memory: MemoryService, ids: list[int]) -> None:
    found = await memory.stores.facts.by_ids(ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise InvalidRequest(
            f"Unknown source fact ids: {missing}.", loc=["body", "source_fact_ids"]
        )


async def _check_observations(memory: MemoryService, ids: list[int]) -> None:
    found = await memory.stores.observations.by_ids(ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise InvalidRequest(
            f"Unknown source observation ids: {missing}.",
            loc=["body", "source_observation_ids"],
        )


async def list_entries(memory: MemoryService, *, include_archived: bool) -> list[ProfileRow]:
    return await memory.stores.profile.entries(include_archived=include_archived)


async def create_entry(
    memory: MemoryService,
    kind: str,
    summary: str,
    fact_ids: list[int],
    obs_ids: list[int],
    confidence: float,
) -> ProfileRow:
    await _check_facts(memory, fact_ids)
    await _check_observations(memory, obs_ids)
    return await memory.stores.profile.insert(
        kind.strip(), " ".join(summary.split()), fact_ids, obs_ids, confidence
    )


async def get_entry(memory: MemoryService, entry_id: int) -> ProfileRow:
    row = await memory.stores.profile.get(entry_id)
    if row is None:
        raise NotFound(f"No profile entry with id {entry_id}.")
    return row


async def entry_detail(memory: MemoryService, entry_id: int) -> EntryDetail:
    row = await get_entry(memory, entry_id)
    facts = await memory.stores.facts.by_ids(row.source_fact_ids)
    obs = await memory.stores.observations.by_ids(row.source_observation_ids)
    return EntryDetail(
        row,
        [facts[i] for i in row.source_fact_ids if i in facts],
        [obs[i] for i in row.source_observation_ids if i in obs],
    )


async def update_entry(
    memory: MemoryService,
    entry_id: int,
    *,
    kind: str | None = None,
    summary: str | None = None,
    source_fact_ids: list[int] | None = None,
    source_observation_ids: list[int] | None = None,
    confidence: float | None = None,
) -> ProfileRow:
    await get_entry(memory, entry_id)
    if source_fact_ids is not None:
        await _check_facts(memory, source_fact_ids)
    if source_observation_ids is not None:
        await _check_observations(memory, source_observation_ids)
    row = await memory.stores.profile.update(
        entry_id,
        kind=kind,
        summary=" ".join(summary.split()) if summary is not None else None,
        source_fact_ids=source_fact_ids,
        source_observation_ids=source_observation_ids,
        confidence=confidence,
    )
    if row is None:  # removed by a request that ran in between
        raise NotFound(f"No profile entry with id {entry_id}.")
    return row


async def archive_entry(memory: MemoryService, entry_id: int) -> None:
    row = await get_entry(memory, entry_id)
    if row.archived_at is None:
        await memory.stores.profile.update(entry_id, archived_at=now_iso())


async def list_dreams(memory: MemoryService, limit: int, offset: int) -> tuple[list[DreamRow], int]:
    return await memory.stores.profile.dreams(limit, offset)


async def dream_detail(memory: MemoryService, dream_id: int) -> DreamDetail:
    row = await memory.stores.profile.get_dream(dream_id)
    if row is None:
        raise NotFound(f"No dream with id {dream_id}.")
    facts = await memory.stores.facts.by_ids(row.source_fact_ids)
    return DreamDetail(row, [facts[i] for i in row.source_fact_ids if i in facts])


async def delete_dream(memory: MemoryService, dream_id: int) -> None:
    if not await memory.stores.profile.delete_dream(dream_id):
        raise NotFound(f"No dream with id {dream_id}.")
