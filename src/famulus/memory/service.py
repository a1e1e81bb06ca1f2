"""MemoryService: the memory area's rules, over the stores in ``famulus.store.memory``
(other areas reach it through ``memory.facade.MemoryFacade``).

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
from datetime import datetime
from typing import Any

import numpy as np

from famulus import config_keys
from famulus.errors import InvalidRequest, NotFound
from famulus.memory import anchors, when
from famulus.memory import recall as fusion
from famulus.memory.embeddings import LOCAL_MODEL_ID, find_model
from famulus.memory.progress import BACKFILL, Progress, ProgressSink, Unheard
from famulus.memory.vectors import (
    EmbedderFactory,
    ReindexSnapshot,
    ReindexState,
    Space,
    load_space,
)
from famulus.store.db import Database
from famulus.store.kv import KVStore
from famulus.store.memory.admin import AdminStore, Cleared, MemoryStats, TableAudit
from famulus.store.memory.common import text_hash
from famulus.store.memory.conversations import ConversationStore
from famulus.store.memory.extraction import ExtractionStore
from famulus.store.memory.facts import EntityRow, FactRow, FactStore, FactTime, LinkedFactRow
from famulus.store.memory.learning import LearningStore
from famulus.store.memory.observations import ObservationRow, ObservationStore
from famulus.store.memory.profile import ProfileStore
from famulus.store.memory.recall import AccessEventRow, RecallStore
from famulus.store.memory.vectors import VectorStore
from famulus.timeutil import parse_iso, utcnow

log = logging.getLogger(__name__)

FACT_KINDS = ("fact", "preference", "event", "relationship", "instruction", "person", "place")
SOURCE_TYPES = ("chat", "manual", "automation", "init", "mail", "calendar", "mcp")
DUPLICATE_COSINE = 0.93
# Set once the facts stored before facts had event days (migration 0420) were read.
EVENT_DATES_READ = "memory.event_dates_read"


@dataclass(frozen=True)
class Recalled:
    facts: list[tuple[FactRow, fusion.Hit]]
    observations: list[tuple[ObservationRow, fusion.Hit]]
    time_range: when.TimeRange | None = None  # the period the query asked about, if any


class Stores:
    """The memory tables, one store per kind of thing, all on the same database."""

    def __init__(self, db: Database) -> None:
        self.facts = FactStore(db)
        self.observations = ObservationStore(db)
        self.vectors = VectorStore(db)
        self.profile = ProfileStore(db)
        self.learning = LearningStore(db)
        self.recall = RecallStore(db)
        self.extraction = ExtractionStore(db)
        self.admin = AdminStore(db)
        self.conversations = ConversationStore(db)


@dataclass(frozen=True)
class FactDetail:
    fact: FactRow
    entities: list[EntityRow]
    linked_facts: list[LinkedFactRow]


@dataclass(frozen=True)
class ObservationDetail:
    observation: ObservationRow
    supporting_facts: list[FactRow]


@dataclass(frozen=True)
class Drift:
    """Facts or observations against their vectors, full-text index and in-memory index."""

    total: int
    without_embedding: list[int]
    stale_embedding: list[int]
    orphan_embedding: list[int]
    fts_missing: list[int]
    fts_orphan: list[int]
    fts_consistent: bool
    index_missing: list[int]
    index_orphan: list[int]

    def healthy(self) -> bool:
        lists = (
            self.without_embedding,
            self.stale_embedding,
            self.orphan_embedding,
            self.fts_missing,
            self.fts_orphan,
            self.index_missing,
            self.index_orphan,
        )
        return self.fts_consistent and not any(lists)


@dataclass(frozen=True)
class Audit:
    embedding_model: str
    facts: Drift
    observations: Drift
    orphan_links: int
    orphan_entity_links: int
    orphan_observation_links: int
    reindex: ReindexSnapshot
    backfill: ReindexSnapshot
    ok: bool


class MemoryService:
    def __init__(
        self, db: Database, kv: KVStore, llm_getter: Any, *, budget_chars: int, zone: str = "UTC"
    ) -> None:
        self.db = db
        self.zone = zone  # the person's time zone: what "yesterday" in a fact means
        self.kv = kv
        self.stores = Stores(db)
        self.factory = EmbedderFactory(llm_getter)
        self.llm_getter = llm_getter
        self.space: Space | None = None
        self.reindex = ReindexState()
        self.catch_up = ReindexState()  # the start-up backfill, in the background
        self.events: ProgressSink = Unheard()  # wiring: the feed GET /memory/events streams
        # Serialises fact/observation writes with a model switch so none is lost.
        self.write_lock = asyncio.Lock()
        # Attached by install(): the parts that run models or timers.
        self.jobs: Any = None
        self.conversations: Any = None  # conversations.ConversationIndex (conversation recall)
        self.learning: Any = None
        self.budget_chars = budget_chars  # the recalled-memory share of the prompt

    # -- lifecycle and status ----------------------------------------------

    async def start(self) -> None:
        """Load the vectors, then catch up on missing ones in the background: with
        thousands of rows to embed, waiting here would keep the server from
        answering (even /health) for tens of seconds. Recall works meanwhile;
        rows not yet embedded are found by full-text search."""
        model = await self.kv.get(config_keys.EMBEDDING_MODEL, LOCAL_MODEL_ID)
        embedder = await self.factory.build_or_local(model)
        self.space = await load_space(self.stores.vectors, embedder)
        self.catch_up = ReindexState(status="running", model=embedder.model_id)
        progress = Progress(self.events, BACKFILL, self.catch_up)
        self.catch_up.task = asyncio.create_task(self._catch_up(progress))

    async def _catch_up(self, progress: Progress) -> None:
        state = progress.state
        try:
            await self.backfill(progress)
            state.status = "completed"
        except asyncio.CancelledError:
            state.status = "failed"
            state.error = "The server stopped before the backfill finished; it resumes at start."
            raise
        except Exception as exc:
            log.exception("embedding backfill failed")
            state.status = "failed"
            state.error = f"The embedding backfill failed ({type(exc).__name__}); see the log."
            return
        finally:
            progress.finished()
        await self._date_old_facts()

    async def _date_old_facts(self) -> None:
        """Once: give facts stored before issue 12 the event days their text names,
        relative to when they were said (their creation time)."""
        if await self.kv.get(EVENT_DATES_READ, False):
            return
        try:
            for row in await self.stores.facts.active(limit=1_000_000):
                if row.event_start is None:
                    said = parse_iso(row.said_at or row.created_at)
                    time = when.stamp(row.text, said, self.zone)
                    if time.event_start is not None:
                        await self.stores.facts.set_event(row.id, time.event_start, time.event_end)
        except Exception:  # dates are a help to recall, never a reason to stop memory
            log.exception("reading the event days of older facts failed")
            return
        await self.kv.set(EVENT_DATES_READ, True)

    async def stop(self) -> None:
        task = self.catch_up.task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def backfill(self, progress: Progress | None = None) -> int:
        """Re-embed active rows whose vector is missing, stale or not in the index.

        Runs at start-up (repairs a crash between a row write and its vector)
        and is what the audit's drift findings call for.
        """
        space = self._space()
        todo: dict[str, list[tuple[int, str]]] = {}
        for owner in ("fact", "observation"):
            have = await self.stores.vectors.hashes(owner, space.model_id)
            in_index = space.index(owner).ids()
            todo[owner] = [
                (i, t)
                for i, t in await self.stores.vectors.texts_to_embed(owner)
                if have.get(i) != text_hash(t) or i not in in_index
            ]
        if progress is not None:
            progress.state.total = sum(len(rows) for rows in todo.values())
            progress.started()
        for owner, rows in todo.items():
            for start in range(0, len(rows), 64):
                await self._embed_rows(space, owner, rows[start : start + 64])
                if progress is not None:
                    progress.advanced(len(rows[start : start + 64]))
        return sum(len(rows) for rows in todo.values())

    def current_embedding_model(self) -> str:
        return self.space.model_id if self.space else LOCAL_MODEL_ID

    def connected(self) -> bool:
        """Memory is usable: storage open and an embedding model loaded."""
        return self.space is not None

    async def enabled(self) -> bool:
        key = config_keys.MEMORY_ENABLED
        return bool(await self.kv.get(key, config_keys.DEFAULTS[key]))

    async def dreams_enabled(self) -> bool:
        key = config_keys.DREAMS_ENABLED
        return bool(await self.kv.get(key, config_keys.DEFAULTS[key]))

    def _space(self) -> Space:
        if self.space is None:
            raise RuntimeError("memory service is not started")
        return self.space

    # -- embedding ----------------------------------------------------------

    async def _embed_rows(self, space: Space, owner: str, rows: list[tuple[int, str]]) -> None:
        if not rows:
            return
        vectors = await space.embedder.embed([t for _, t in rows])
        await self.stores.vectors.put(
            owner, space.model_id, [(i, t, vectors[n]) for n, (i, t) in enumerate(rows)]
        )
        index = space.index(owner)
        for n, (i, _) in enumerate(rows):
            index.upsert(i, vectors[n])

    async def embed_query(self, text: str, *, question: bool = True) -> tuple[Space, np.ndarray]:
        """A question embeds as a query; a fact compared with facts as a fact (E5 tells them apart)."""
        space = self._space()
        embed = space.embedder.embed_queries if question else space.embedder.embed
        vectors = await embed([text])
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
        said_at: datetime | None = None,
        event: when.TimeRange | None = None,
    ) -> FactRow:
        """Store, embed and index a fact. ``said_at`` (default now) is when it was
        said; the event's days are ``event`` or what the text says ("last Tuesday")."""
        text = _clean(text)
        time = when.stamp(text, said_at, self.zone, event)
        async with self.write_lock:
            row = await self.stores.facts.insert(
                text,
                kind,
                source_type,
                source_ref,
                salience=salience,
                provenance=provenance,
                time=time,
            )
            await self._embed_rows(self._space(), "fact", [(row.id, row.text)])
        return row

    async def import_facts(
        self, items: list[tuple[str, str, datetime | None]]
    ) -> tuple[list[FactRow], int]:
        """Bulk import: one transaction for the rows, embeddings in batches of 64
        (one model call per batch instead of one per fact). Exact repeats of an
        active fact are skipped; returns (created, skipped). An item may carry
        when it was said (else now)."""
        # In a worker thread: reading the dates costs dateparser milliseconds
        # per fact, seconds for thousands, which would hold every other request.
        cleaned = await asyncio.to_thread(self._stamped, items)
        async with self.write_lock:
            rows = await self.stores.facts.insert_many(cleaned, "manual")
            space = self._space()
            for start in range(0, len(rows), 64):
                batch = rows[start : start + 64]
                await self._embed_rows(space, "fact", [(r.id, r.text) for r in batch])
        return rows, len(items) - len(rows)

    def _stamped(
        self, items: list[tuple[str, str, datetime | None]]
    ) -> list[tuple[str, str, FactTime]]:
        """Each item's clean text and kind with when it was said and happened."""
        cleaned = [(_clean(raw), kind, said) for raw, kind, said in items]
        return [(text, kind, when.stamp(text, said, self.zone)) for text, kind, said in cleaned]

    async def find_duplicate(self, text: str) -> FactRow | None:
        """An active fact that says the same thing (cosine above the merge threshold)."""
        space, vec = await self.embed_query(text, question=False)
        hits = space.facts.search(vec, 1)
        info = find_model(space.model_id)
        if hits and hits[0][1] >= (info.duplicate_cosine if info else DUPLICATE_COSINE):
            return await self.stores.facts.get(hits[0][0])
        return None

    async def get_fact(self, fact_id: int) -> FactRow:
        row = await self.stores.facts.get(fact_id)
        if row is None:
            raise NotFound(f"No fact with id {fact_id}.")
        return row

    async def update_fact(self, fact_id: int, text: str | None, kind: str | None) -> FactRow:
        current = await self.get_fact(fact_id)
        async with self.write_lock:
            row = await self.stores.facts.update(
                fact_id, text=_clean(text) if text is not None else None, kind=kind
            )
            if row is None:  # deleted by a request that ran in between
                raise NotFound(f"No fact with id {fact_id}.")
            if text is not None:
                await self._redate(row)
                row = await self.get_fact(fact_id)
            if text is not None and current.archived_at is None:
                await self._embed_rows(self._space(), "fact", [(row.id, row.text)])
        return row

    async def _redate(self, row: FactRow) -> None:
        """An edited text may name another day: read it again, relative to when
        the fact was said."""
        said = parse_iso(row.said_at or row.created_at)
        time = when.stamp(row.text, said, self.zone)
        await self.stores.facts.set_event(row.id, time.event_start, time.event_end)

    async def delete_fact(self, fact_id: int) -> None:
        async with self.write_lock:
            if not await self.stores.facts.delete(fact_id):
                raise NotFound(f"No fact with id {fact_id}.")
            self._space().facts.remove(fact_id)

    async def supersede(self, old_id: int, new_id: int, reason: str) -> None:
        async with self.write_lock:
            await self.stores.facts.supersede(old_id, new_id, reason)
            self._space().facts.remove(old_id)

    async def list_facts(
        self,
        *,
        limit: int,
        offset: int,
        q: str | None = None,
        kind: str | None = None,
        source_type: str | None = None,
        archived: bool = False,
    ) -> tuple[list[FactRow], int]:
        """A page of active (or archived) facts, optionally full-text searched."""
        return await self.stores.facts.page(
            limit=limit, offset=offset, q=q, kind=kind, source_type=source_type, archived=archived
        )

    async def fact_detail(self, fact_id: int) -> FactDetail:
        fact = await self.get_fact(fact_id)
        return FactDetail(
            fact,
            await self.stores.facts.entities_of(fact_id),
            await self.stores.facts.linked(fact_id),
        )

    # -- observations -------------------------------------------------------

    async def add_observation(self, summary: str, fact_ids: list[int]) -> ObservationRow:
        async with self.write_lock:
            row = await self.stores.observations.insert(_clean(summary), fact_ids)
            await self._embed_rows(self._space(), "observation", [(row.id, row.summary)])
        return row

    async def get_observation(self, obs_id: int) -> ObservationRow:
        row = await self.stores.observations.get(obs_id)
        if row is None:
            raise NotFound(f"No observation with id {obs_id}.")
        return row

    async def list_observations(self, limit: int, offset: int) -> tuple[list[ObservationRow], int]:
        return await self.stores.observations.page(limit, offset)

    async def observation_detail(self, obs_id: int) -> ObservationDetail:
        row = await self.get_observation(obs_id)
        return ObservationDetail(row, await self.stores.observations.supporting_facts(obs_id))

    async def update_observation(self, obs_id: int, summary: str) -> ObservationRow:
        await self.get_observation(obs_id)
        async with self.write_lock:
            row = await self.stores.observations.update(obs_id, _clean(summary))
            if row is None:  # deleted by a request that ran in between
                raise NotFound(f"No observation with id {obs_id}.")
            await self._embed_rows(self._space(), "observation", [(row.id, row.summary)])
        return row

    async def delete_observation(self, obs_id: int) -> None:
        async with self.write_lock:
            if not await self.stores.observations.delete(obs_id):
                raise NotFound(f"No observation with id {obs_id}.")
            self._space().observations.remove(obs_id)

    # -- recall -------------------------------------------------------------

    async def recall(
        self,
        query: str,
        limit: int = fusion.LIMIT,
        obs_limit: int = fusion.OBS_LIMIT,
        *,
        mode: str = "hybrid",
        use_time: bool = True,
    ) -> Recalled:
        """Hybrid recall; ``mode`` "fts" or "vector" runs one retriever alone (benchmarks).

        A query that names a time ("in June", "last year") ranks facts of that
        period first (``when.boost``); ``use_time=False`` leaves that out (benchmarks)."""
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
        fact_fts, obs_fts = await self.stores.recall.fts_candidates(query, fusion.CANDIDATES)
        span = await self._asked_period(query) if use_time else None
        dated = await self._dated(span)
        fact_ids = list(dict.fromkeys([*fact_fts, *(i for i, _ in fact_vec), *dated]))
        obs_ids = list(dict.fromkeys([*obs_fts, *(i for i, _ in obs_vec)]))
        facts = await self.stores.facts.by_ids(fact_ids)
        observations = await self.stores.observations.by_ids(obs_ids)
        fact_hits = fusion.fuse(
            fact_fts,
            fact_vec,
            lambda ids: _fact_meta(facts, ids),
            max(limit, fusion.CANDIDATES) if span else limit,
            **flags,
        )
        if span is not None:
            fact_hits = when.boost(fact_hits, facts, span, self.zone, dated)[:limit]
        obs_hits = fusion.fuse(
            obs_fts, obs_vec, lambda ids: _obs_meta(observations, ids), obs_limit, **flags
        )
        return Recalled(
            facts=[(facts[h.id], h) for h in fact_hits if h.id in facts],
            observations=[(observations[h.id], h) for h in obs_hits if h.id in observations],
            time_range=span,
        )

    async def _asked_period(self, query: str) -> when.TimeRange | None:
        """The period ``query`` asks about: a date it names ("in June"), else the
        time of an event it names ("before the wedding") that memory knows once."""
        span = when.time_range(query, utcnow(), self.zone)
        anchor = anchors.find(query) if span is None else None
        if anchor is None:
            return span
        event = await self._anchor_fact(anchor.what)
        if event is None:
            return None
        start, end = when.fact_days(event, self.zone)
        return anchors.period(anchor, start, end, when.local(utcnow(), self.zone).date())

    async def _anchor_fact(self, what: str) -> FactRow | None:
        """The one fact that tells of the event ``what``: its text holds every word
        of it ("my wedding": "wedding"). None when none or several do ("the
        concert" when three concerts were told of): a wrong anchor would rank
        the wrong season first, so only an event memory knows once counts."""
        ids = await self.stores.recall.facts_with_all(what, 2)
        if len(ids) != 1:
            return None
        return (await self.stores.facts.by_ids(ids)).get(ids[0])

    async def _dated(self, span: when.TimeRange | None) -> list[int]:
        """Facts of the asked period, whether or not the text search finds them."""
        if span is None:
            return []
        days = (span.start.isoformat(), span.end.isoformat())
        return await self.stores.facts.in_period(
            days, when.said_bounds(span, self.zone), fusion.CANDIDATES
        )

    async def access_events(self, limit: int) -> list[AccessEventRow]:
        """The latest recall access events, newest first."""
        return await self.stores.recall.access_events(limit)

    # -- stats, clear, audit -----------------------------------------------

    async def stats(self) -> MemoryStats:
        return await self.stores.admin.stats()

    async def clear(self) -> Cleared:
        async with self.write_lock:
            deleted = await self.stores.admin.clear()
            space = self._space()
            space.facts.load([], np.zeros((0, space.facts.dim), dtype=np.float32))
            space.observations.load([], np.zeros((0, space.facts.dim), dtype=np.float32))
        return deleted

    async def audit(self) -> Audit:
        space = self._space()
        raw = await self.stores.admin.audit(space.model_id)
        facts = _drift(raw.facts, space.index("fact").ids())
        observations = _drift(raw.observations, space.index("observation").ids())
        orphans = (raw.orphan_links, raw.orphan_entity_links, raw.orphan_observation_links)
        return Audit(
            embedding_model=space.model_id,
            facts=facts,
            observations=observations,
            orphan_links=raw.orphan_links,
            orphan_entity_links=raw.orphan_entity_links,
            orphan_observation_links=raw.orphan_observation_links,
            reindex=self.reindex.snapshot(),
            backfill=self.catch_up.snapshot(),
            ok=facts.healthy() and observations.healthy() and not any(orphans),
        )


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


def _drift(table: TableAudit, index_ids: set[int]) -> Drift:
    """The table's findings plus the in-memory index against the active rows."""
    active = set(table.active_ids)
    unembedded = set(table.without_embedding)
    return Drift(
        total=len(table.active_ids),
        without_embedding=table.without_embedding,
        stale_embedding=table.stale_embedding,
        orphan_embedding=table.orphan_embedding,
        fts_missing=table.fts_missing,
        fts_orphan=table.fts_orphan,
        fts_consistent=table.fts_consistent,
        index_missing=sorted(i for i in active if i not in index_ids and i not in unembedded),
        index_orphan=sorted(i for i in index_ids if i not in active),
    )
