"""Profile entries and dreams: validation and the shapes the API returns."""

from __future__ import annotations

from typing import Any

from famulus.errors import InvalidRequest, NotFound
from famulus.memory.service import MemoryService

_PROFILE_FIELDS = (
    "id",
    "kind",
    "summary",
    "source_fact_ids",
    "source_observation_ids",
    "confidence",
    "created_at",
    "updated_at",
    "archived_at",
)


def public_entry(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in _PROFILE_FIELDS}


def public_dream(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("id", "bridge", "insight", "source_fact_ids", "created_at")}


async def _check_facts(memory: MemoryService, ids: list[int]) -> None:
    found = await memory.store.facts_by_ids(ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise InvalidRequest(
            f"Unknown source fact ids: {missing}.", loc=["body", "source_fact_ids"]
        )


async def _check_observations(memory: MemoryService, ids: list[int]) -> None:
    found = await memory.store.observations_by_ids(ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise InvalidRequest(
            f"Unknown source observation ids: {missing}.",
            loc=["body", "source_observation_ids"],
        )


async def create_entry(
    memory: MemoryService,
    kind: str,
    summary: str,
    fact_ids: list[int],
    obs_ids: list[int],
    confidence: float,
) -> dict[str, Any]:
    await _check_facts(memory, fact_ids)
    await _check_observations(memory, obs_ids)
    return await memory.extra.insert_profile(
        kind.strip(), " ".join(summary.split()), fact_ids, obs_ids, confidence
    )


async def get_entry(memory: MemoryService, entry_id: int) -> dict[str, Any]:
    row = await memory.extra.get_profile(entry_id)
    if row is None:
        raise NotFound(f"No profile entry with id {entry_id}.")
    return row


async def entry_detail(memory: MemoryService, entry_id: int) -> dict[str, Any]:
    row = await get_entry(memory, entry_id)
    facts = await memory.store.facts_by_ids(row["source_fact_ids"])
    obs = await memory.store.observations_by_ids(row["source_observation_ids"])
    return {
        "entry": public_entry(row),
        "source_facts": [facts[i].public() for i in row["source_fact_ids"] if i in facts],
        "source_observations": [obs[i].public() for i in row["source_observation_ids"] if i in obs],
    }


async def update_entry(memory: MemoryService, entry_id: int, **fields: Any) -> dict[str, Any]:
    await get_entry(memory, entry_id)
    if fields.get("source_fact_ids") is not None:
        await _check_facts(memory, fields["source_fact_ids"])
    if fields.get("source_observation_ids") is not None:
        await _check_observations(memory, fields["source_observation_ids"])
    if fields.get("summary") is not None:
        fields["summary"] = " ".join(fields["summary"].split())
    row = await memory.extra.update_profile(entry_id, **fields)
    if row is None:  # removed by a request that ran in between
        raise NotFound(f"No profile entry with id {entry_id}.")
    return row


async def archive_entry(memory: MemoryService, entry_id: int) -> None:
    row = await get_entry(memory, entry_id)
    if row["archived_at"] is None:
        from famulus.timeutil import now_iso

        await memory.extra.update_profile(entry_id, archived_at=now_iso())


async def dream_detail(memory: MemoryService, dream_id: int) -> dict[str, Any]:
    row = await memory.extra.get_dream(dream_id)
    if row is None:
        raise NotFound(f"No dream with id {dream_id}.")
    facts = await memory.store.facts_by_ids(row["source_fact_ids"])
    return {
        "dream": public_dream(row),
        "source_facts": [facts[i].public() for i in row["source_fact_ids"] if i in facts],
    }
