"""MemoryService: the memory area's rules (other areas reach it through ``memory.facade.MemoryFacade``).

It owns the rules that tie rows and indexes together: every write of a fact
or observation embeds the text and updates the in-memory index before it
returns, so recall follows edits and deletes at once. Model-driven work
(extraction, consolidation, learning) lives in sibling modules and calls back
into this service for every write.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from famulus import config_keys
from famulus.errors import InvalidRequest, NotFound
from famulus.memory import recall as fusion
from famulus.memory.embeddings import LOCAL_MODEL_ID
from famulus.memory.vectors import EmbedderFactory, ReindexState, Space, load_space
from famulus.store.db import Database
from famulus.store.kv import KVStore
from famulus.store.memory import FactRow, MemoryStore, ObservationRow, text_hash
from famulus.store.memory_admin import MemoryAdminStore
from famulus.store.memory_extra import MemoryExtraStore

log = logging.getLogger(__name__)

FACT_KINDS = ("fact", "preference", "event", "relationship", "instruction", "person", "place")
SOURCE_TYPES = ("chat", "manual", "automation", "init", "mail", "calendar")
DUPLICATE_COSINE = 0.93


@dataclass(frozen=True)
class Recalled:
    facts: list[tuple[FactRow, fusion.Hit]]
    observations: list[tuple[ObservationRow, fusion.Hit]]


class MemoryService:
    def __init__(self, db: Database, kv: KVStore, llm_getter: Any) -> None:
        self.db = db
        self.kv = kv
        self.store = MemoryStore(db)
        self.extra = MemoryExtraStore(db)
        self.admin = MemoryAdminStore(db)
        self.factory = EmbedderFactory(llm_getter)
        self.llm_getter = llm_getter
        self.space: Space | None = None
        self.reindex = ReindexState()
        self.catch_up = ReindexState()  # the start-up backfill, in the background
        # Serialises fact/observation writes with a model switch so none is lost.
        self.write_lock = asyncio.Lock()
        # Attached by install(): the parts that run models or timers.
        self.jobs: Any = None
        self.learning: Any = None
        self.budget_chars = 4000

    # -- lifecycle and status ----------------------------------------------

    async def start(self) -> None:
        """Load the vectors, then catch up on missing ones in the background: with
        thousands of rows to embed, waiting here would keep the server from
        answering (even /health) for tens of seconds. Recall works meanwhile;
        rows not yet embedded are found by full-text search."""
        model = await self.kv.get(config_keys.EMBEDDING_MODEL, LOCAL_MODEL_ID)
        embedder = await self.factory.build_or_local(model)
        self.space = await load_space(self.store, embedder)
        self.catch_up = ReindexState(status="running", model=embedder.model_id)
        self.catch_up.task = asyncio.create_task(self._catch_up(self.catch_up))

    async def _catch_up(self, state: ReindexState) -> None:
        try:
            await self.backfill(state)
            state.status = "completed"
        except asyncio.CancelledError:
            state.status = "failed"
            state.error = "The server stopped before the backfill finished; it resumes at start."
            raise
        except Exception as exc:
            log.exception("embedding backfill failed")
            state.status = "failed"
            state.error = f"The embedding backfill failed ({type(exc).__name__}); see the log."

    async def stop(self) -> None:
        task = self.catch_up.task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def backfill(self, progress: ReindexState | None = None) -> int:
        """Re-embed active rows whose vector is missing, stale or not in the index.

        Runs at start-up (repairs a crash between a row write and its vector)
        and is what the audit's drift findings call for.
        """
        space = self._space()
        todo: dict[str, list[tuple[int, str]]] = {}
        for owner in ("fact", "observation"):
            have = await self.store.vector_hashes(owner, space.model_id)
            in_index = space.index(owner).ids()
            todo[owner] = [
                (i, t)
                for i, t in await self.store.texts_to_embed(owner)
                if have.get(i) != text_hash(t) or i not in in_index
            ]
        if progress is not None:
            progress.total = sum(len(rows) for rows in todo.values())
        for owner, rows in todo.items():
            for start in range(0, len(rows), 64):
                await self._embed_rows(space, owner, rows[start : start + 64])
                if progress is not None:
                    progress.done += len(rows[start : start + 64])
        return sum(len(rows) for rows in todo.values())

    def current_embedding_model(self) -> str:
        return self.space.model_id if self.space else LOCAL_MODEL_ID

    def connected(self) -> bool:
        """Memory is usable: storage open and an embedding model loaded."""
        return self.space is not None

    async def enabled(self) -> bool:
        return bool(await self.kv.get(config_keys.MEMORY_ENABLED, True))

    async def dreams_enabled(self) -> bool:
        return bool(await self.kv.get(config_keys.DREAMS_ENABLED, False))

    def _space(self) -> Space:
        if self.space is None:
            raise RuntimeError("memory service is not started")
        return self.space

    # -- embedding ----------------------------------------------------------

    async def _embed_rows(self, space: Space, owner: str, rows: list[tuple[int, str]]) -> None:
        if not rows:
            return
        vectors = await space.embedder.embed([t for _, t in rows])
        await self.store.put_vectors(
            owner, space.model_id, [(i, t, vectors[n]) for n, (i, t) in enumerate(rows)]
        )
        index = space.index(owner)
        for n, (i, _) in enumerate(rows):
            index.upsert(i, vectors[n])

    async def embed_query(self, text: str) -> tuple[Space, np.ndarray]:
        space = self._space()
        vectors = await space.embedder.embed([text])
        return space, vectors[0]

    # -- facts --------------------------------------------------------------

    async def add_fact(
        self,
        text: str,
        kind: str = "fact",
        source_type: str = "manual",
        source_ref: str | None = None,
        *,
        salience: float = 0.5,
        provenance: dict[str, Any] | None = None,
    ) -> FactRow:
        text = _clean(text)
        async with self.write_lock:
            row = await self.store.insert_fact(
                text, kind, source_type, source_ref, salience=salience, provenance=provenance
            )
            await self._embed_rows(self._space(), "fact", [(row.id, row.text)])
        return row

    async def import_facts(self, items: list[tuple[str, str]]) -> tuple[list[FactRow], int]:
        """Bulk import: one transaction for the rows, embeddings in batches of 64
        (one model call per batch instead of one per fact). Exact repeats of an
        active fact are skipped; returns (created, skipped)."""
        cleaned = [(_clean(text), kind) for text, kind in items]
        async with self.write_lock:
            rows = await self.store.insert_facts(cleaned, "manual")
            space = self._space()
            for start in range(0, len(rows), 64):
                batch = rows[start : start + 64]
                await self._embed_rows(space, "fact", [(r.id, r.text) for r in batch])
        return rows, len(items) - len(rows)

    async def find_duplicate(self, text: str) -> FactRow | None:
        """An active fact that says the same thing (cosine above the merge threshold)."""
        space, vec = await self.embed_query(text)
        hits = space.facts.search(vec, 1)
        if hits and hits[0][1] >= DUPLICATE_COSINE:
            return await self.store.get_fact(hits[0][0])
        return None

    async def get_fact(self, fact_id: int) -> FactRow:
        row = await self.store.get_fact(fact_id)
        if row is None:
            raise NotFound(f"No fact with id {fact_id}.")
        return row

    async def update_fact(self, fact_id: int, text: str | None, kind: str | None) -> FactRow:
        current = await self.get_fact(fact_id)
        async with self.write_lock:
            row = await self.store.update_fact(
                fact_id, text=_clean(text) if text is not None else None, kind=kind
            )
            if row is None:  # deleted by a request that ran in between
                raise NotFound(f"No fact with id {fact_id}.")
            if text is not None and current.archived_at is None:
                await self._embed_rows(self._space(), "fact", [(row.id, row.text)])
        return row

    async def delete_fact(self, fact_id: int) -> None:
        async with self.write_lock:
            if not await self.store.delete_fact(fact_id):
                raise NotFound(f"No fact with id {fact_id}.")
            self._space().facts.remove(fact_id)

    async def supersede(self, old_id: int, new_id: int, reason: str) -> None:
        async with self.write_lock:
            await self.store.supersede(old_id, new_id, reason)
            self._space().facts.remove(old_id)

    async def fact_detail(self, fact_id: int) -> dict[str, Any]:
        fact = await self.get_fact(fact_id)
        return {
            "fact": fact.public(),
            "entities": await self.store.entities_of(fact_id),
            "linked_facts": await self.store.linked_facts(fact_id),
        }

    # -- observations -------------------------------------------------------

    async def add_observation(self, summary: str, fact_ids: list[int]) -> ObservationRow:
        async with self.write_lock:
            row = await self.store.insert_observation(_clean(summary), fact_ids)
            await self._embed_rows(self._space(), "observation", [(row.id, row.summary)])
        return row

    async def get_observation(self, obs_id: int) -> ObservationRow:
        row = await self.store.get_observation(obs_id)
        if row is None:
            raise NotFound(f"No observation with id {obs_id}.")
        return row

    async def update_observation(self, obs_id: int, summary: str) -> ObservationRow:
        await self.get_observation(obs_id)
        async with self.write_lock:
            row = await self.store.update_observation(obs_id, _clean(summary))
            if row is None:  # deleted by a request that ran in between
                raise NotFound(f"No observation with id {obs_id}.")
            await self._embed_rows(self._space(), "observation", [(row.id, row.summary)])
        return row

    async def delete_observation(self, obs_id: int) -> None:
        async with self.write_lock:
            if not await self.store.delete_observation(obs_id):
                raise NotFound(f"No observation with id {obs_id}.")
            self._space().observations.remove(obs_id)

    # -- recall -------------------------------------------------------------

    async def recall(
        self, query: str, limit: int = 8, obs_limit: int = 4, *, mode: str = "hybrid"
    ) -> Recalled:
        """Hybrid recall; ``mode`` "fts" or "vector" runs one retriever alone (benchmarks)."""
        space = self._space()
        if len(space.facts) or len(space.observations):
            _, qvec = await self.embed_query(query)
            fact_vec = space.facts.search(qvec, fusion.CANDIDATES)
            obs_vec = space.observations.search(qvec, fusion.CANDIDATES)
        else:  # nothing to compare with: no need to embed the query (full-text still runs)
            fact_vec, obs_vec = [], []
        flags = {
            "use_fts": mode != "vector",
            "use_vec": mode != "fts",
            "use_recency": mode == "hybrid",
        }
        fact_fts, obs_fts = await self.store.fts_facts_and_observations(query, fusion.CANDIDATES)
        fact_ids = list(dict.fromkeys([*fact_fts, *(i for i, _ in fact_vec)]))
        obs_ids = list(dict.fromkeys([*obs_fts, *(i for i, _ in obs_vec)]))
        facts = await self.store.facts_by_ids(fact_ids)
        observations = await self.store.observations_by_ids(obs_ids)
        fact_hits = fusion.fuse(
            fact_fts, fact_vec, lambda ids: _fact_meta(facts, ids), limit, **flags
        )
        obs_hits = fusion.fuse(
            obs_fts, obs_vec, lambda ids: _obs_meta(observations, ids), obs_limit, **flags
        )
        return Recalled(
            facts=[(facts[h.id], h) for h in fact_hits if h.id in facts],
            observations=[(observations[h.id], h) for h in obs_hits if h.id in observations],
        )

    # -- stats, clear, audit -----------------------------------------------

    async def stats(self) -> dict[str, int]:
        return await self.admin.stats()

    async def clear(self) -> dict[str, int]:
        async with self.write_lock:
            deleted = await self.admin.clear()
            space = self._space()
            space.facts.load([], np.zeros((0, space.facts.dim), dtype=np.float32))
            space.observations.load([], np.zeros((0, space.facts.dim), dtype=np.float32))
        return deleted

    async def audit(self) -> dict[str, Any]:
        space = self._space()
        raw = await self.admin.audit(space.model_id)
        body: dict[str, Any] = {"embedding_model": space.model_id}
        for owner, key in (("fact", "facts"), ("observation", "observations")):
            part = raw[key]
            active = set(part.pop("active_ids", []))
            index_ids = space.index(owner).ids()
            part["index_missing"] = sorted(
                i for i in active if i not in index_ids and i not in part["without_embedding"]
            )
            part["index_orphan"] = sorted(i for i in index_ids if i not in active)
            body[key] = _counts(part)
        body["orphan_links"] = raw["orphan_links"]
        body["orphan_entity_links"] = raw["orphan_entity_links"]
        body["orphan_observation_links"] = raw["orphan_observation_links"]
        body["reindex"] = self.reindex.public()
        body["backfill"] = self.catch_up.public()
        body["ok"] = _healthy(body)
        return body


def _clean(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise InvalidRequest("The text is empty; write what should be remembered.")
    return text


def _fact_meta(rows: dict[int, FactRow], ids: list[int]) -> dict[int, fusion.Meta]:
    return {
        i: fusion.Meta(rows[i].updated_at, rows[i].salience, rows[i].access_count)
        for i in ids
        if i in rows and rows[i].archived_at is None
    }


def _obs_meta(rows: dict[int, ObservationRow], ids: list[int]) -> dict[int, fusion.Meta]:
    return {
        i: fusion.Meta(rows[i].updated_at, 0.5 + 0.05 * rows[i].evidence_count, 0)
        for i in ids
        if i in rows and rows[i].archived_at is None
    }


def _counts(part: dict[str, Any]) -> dict[str, Any]:
    """Each drift list becomes a count plus up to 20 example ids a person can open."""
    out: dict[str, Any] = {}
    for key, value in part.items():
        if isinstance(value, list):
            out[key] = len(value)
            if value:
                out[f"{key}_ids"] = value[:20]
        else:
            out[key] = value
    return out


def _healthy(body: dict[str, Any]) -> bool:
    for key in ("facts", "observations"):
        part = body[key]
        if not part["fts_consistent"]:
            return False
        for name, value in part.items():
            if name not in ("total", "fts_consistent") and isinstance(value, int) and value:
                return False
    return not (
        body["orphan_links"] or body["orphan_entity_links"] or body["orphan_observation_links"]
    )
