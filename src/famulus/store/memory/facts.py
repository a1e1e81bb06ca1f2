"""Facts, with the entities they mention and the links between them.

Full-text rows follow the base rows through triggers (migration 0200).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from famulus.store.db import Database
from famulus.store.memory.common import Conn, drop_profile_source, fts_query, obj
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class FactRow:
    id: int
    text: str
    kind: str
    source_type: str
    source_ref: str | None
    salience: float
    created_at: str
    updated_at: str
    access_count: int
    last_accessed_at: str | None
    archived_at: str | None
    superseded_by: int | None
    provenance: dict[str, Any] = field(default_factory=dict)
    said_at: str | None = None  # when it was said or learned (migration 0420)
    event_start: str | None = None  # the days the event happened, if known
    event_end: str | None = None


@dataclass(frozen=True)
class FactTime:
    """When a fact was said (ISO timestamp) and the days its event happened (ISO dates)."""

    said_at: str | None = None
    event_start: str | None = None
    event_end: str | None = None


@dataclass(frozen=True)
class EntityRow:
    id: int
    name: str
    type: str


@dataclass(frozen=True)
class LinkedFactRow:
    """A fact linked to another one, seen from that other one."""

    id: int
    text: str
    link_type: str
    weight: float


def fact_row(row: sqlite3.Row) -> FactRow:
    data = dict(row)
    data["provenance"] = obj(data.get("provenance"))
    return FactRow(**data)


def get_fact(conn: Conn, fact_id: int) -> FactRow | None:
    row = conn.execute("SELECT * FROM facts WHERE id = ?", (fact_id,)).fetchone()
    return fact_row(row) if row else None


def _link(conn: Conn, from_id: int, to_id: int, link_type: str, weight: float) -> None:
    conn.execute(
        "INSERT INTO fact_links (from_id, to_id, link_type, weight, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (from_id, to_id, link_type)"
        " DO UPDATE SET weight = excluded.weight",
        (from_id, to_id, link_type, weight, now_iso()),
    )


class FactStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert(
        self,
        text: str,
        kind: str,
        source_type: str,
        source_ref: str | None = None,
        *,
        salience: float = 0.5,
        provenance: dict[str, Any] | None = None,
        time: FactTime | None = None,
    ) -> FactRow:
        now = now_iso()
        time = time or FactTime()

        def op(conn: Conn) -> FactRow:
            cur = conn.execute(
                "INSERT INTO facts (text, kind, source_type, source_ref, salience, created_at,"
                " updated_at, provenance, said_at, event_start, event_end)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    text,
                    kind,
                    source_type,
                    source_ref,
                    salience,
                    now,
                    now,
                    json.dumps(provenance or {}),
                    time.said_at or now,
                    time.event_start,
                    time.event_end,
                ),
            )
            return get_fact(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def insert_many(
        self, items: list[tuple[str, str, FactTime]], source_type: str
    ) -> list[FactRow]:
        """Many (text, kind, time) facts in one transaction (bulk import); texts
        already held by an active fact, or repeated in ``items``, are left out."""
        now = now_iso()

        def op(conn: Conn) -> list[FactRow]:
            seen = {
                str(r[0]) for r in conn.execute("SELECT text FROM facts WHERE archived_at IS NULL")
            }
            ids: list[int] = []
            for text, kind, time in items:
                if text in seen:
                    continue
                seen.add(text)
                cur = conn.execute(
                    "INSERT INTO facts (text, kind, source_type, salience, created_at,"
                    " updated_at, provenance, said_at, event_start, event_end)"
                    " VALUES (?, ?, ?, 0.5, ?, ?, '{}', ?, ?, ?)",
                    (
                        text,
                        kind,
                        source_type,
                        now,
                        now,
                        time.said_at or now,
                        time.event_start,
                        time.event_end,
                    ),
                )
                ids.append(int(cur.lastrowid or 0))
            return [f for f in (get_fact(conn, i) for i in ids) if f is not None]

        return await self.db.write(op)

    async def get(self, fact_id: int) -> FactRow | None:
        return await self.db.read(lambda conn: get_fact(conn, fact_id))

    async def by_ids(self, ids: list[int]) -> dict[int, FactRow]:
        if not ids:
            return {}

        def op(conn: Conn) -> dict[int, FactRow]:
            marks = ",".join("?" * len(ids))
            rows = conn.execute(f"SELECT * FROM facts WHERE id IN ({marks})", ids).fetchall()
            return {r["id"]: fact_row(r) for r in rows}

        return await self.db.read(op)

    async def page(
        self,
        *,
        limit: int,
        offset: int,
        q: str | None = None,
        kind: str | None = None,
        source_type: str | None = None,
        archived: bool = False,
    ) -> tuple[list[FactRow], int]:
        where = ["f.archived_at IS NOT NULL" if archived else "f.archived_at IS NULL"]
        params: list[Any] = []
        join = ""
        if q:
            expr = fts_query(q)
            if not expr:
                return [], 0
            join = " JOIN facts_fts ON facts_fts.rowid = f.id"
            where.append("facts_fts MATCH ?")
            params.append(expr)
        if kind:
            where.append("f.kind = ?")
            params.append(kind)
        if source_type:
            where.append("f.source_type = ?")
            params.append(source_type)
        clause = f" FROM facts f{join} WHERE " + " AND ".join(where)
        order = " ORDER BY facts_fts.rank" if q else " ORDER BY f.updated_at DESC, f.id DESC"

        def op(conn: Conn) -> tuple[list[FactRow], int]:
            total = conn.execute("SELECT COUNT(*)" + clause, params).fetchone()[0]
            rows = conn.execute(
                "SELECT f.*" + clause + order + " LIMIT ? OFFSET ?", [*params, limit, offset]
            ).fetchall()
            return [fact_row(r) for r in rows], int(total)

        return await self.db.read(op)

    async def active(self, limit: int = 10_000) -> list[FactRow]:
        def op(conn: Conn) -> list[FactRow]:
            rows = conn.execute(
                "SELECT * FROM facts WHERE archived_at IS NULL ORDER BY id LIMIT ?", (limit,)
            ).fetchall()
            return [fact_row(r) for r in rows]

        return await self.db.read(op)

    async def update(
        self,
        fact_id: int,
        *,
        text: str | None = None,
        kind: str | None = None,
        salience: float | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> FactRow | None:
        """Changes the fields given (None keeps a field); None when the fact is gone."""
        fields: dict[str, Any] = {
            "text": text,
            "kind": kind,
            "salience": salience,
            "provenance": json.dumps(provenance) if provenance is not None else None,
        }
        fields = {k: v for k, v in fields.items() if v is not None}

        def op(conn: Conn) -> FactRow | None:
            if fields:
                sets = ", ".join(f"{k} = ?" for k in fields)
                conn.execute(
                    f"UPDATE facts SET {sets}, updated_at = ? WHERE id = ?",
                    [*fields.values(), now_iso(), fact_id],
                )
            return get_fact(conn, fact_id)

        return await self.db.write(op)

    async def in_period(self, days: tuple[str, str], said: tuple[str, str], k: int) -> list[int]:
        """Active facts about the ``days`` (ISO dates, both included): their event
        overlaps them, or, with no event date, they were said within ``said``
        (UTC timestamps, end excluded). Latest first, at most ``k``."""

        def op(conn: Conn) -> list[int]:
            rows = conn.execute(
                "SELECT id FROM facts WHERE archived_at IS NULL AND ("
                " (event_start IS NOT NULL AND event_start <= ? AND event_end >= ?)"
                " OR (event_start IS NULL AND said_at >= ? AND said_at < ?))"
                " ORDER BY COALESCE(event_start, said_at) DESC, id DESC LIMIT ?",
                (days[1], days[0], said[0], said[1], k),
            ).fetchall()
            return [int(r[0]) for r in rows]

        return await self.db.read(op)

    async def set_event(self, fact_id: int, start: str | None, end: str | None) -> None:
        """The days the fact's event happened (None, None: not known), after an edit."""
        await self.db.write(
            lambda conn: conn.execute(
                "UPDATE facts SET event_start = ?, event_end = ? WHERE id = ?",
                (start, end, fact_id),
            )
        )

    async def supersede(self, old_id: int, new_id: int, reason: str) -> None:
        """Archive the old fact, pointing at its successor; it stays readable by id."""
        now = now_iso()

        def op(conn: Conn) -> None:
            row = get_fact(conn, old_id)
            if row is None:
                return
            prov = {**row.provenance, "superseded": {"by": new_id, "at": now, "reason": reason}}
            conn.execute(
                "UPDATE facts SET archived_at = ?, superseded_by = ?, provenance = ? WHERE id = ?",
                (now, new_id, json.dumps(prov), old_id),
            )
            conn.execute(
                "DELETE FROM memory_vectors WHERE owner_type = 'fact' AND owner_id = ?", (old_id,)
            )
            _link(conn, new_id, old_id, "supersedes", 1.0)

        await self.db.write(op)

    async def delete(self, fact_id: int) -> bool:
        def op(conn: Conn) -> bool:
            n = conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,)).rowcount
            conn.execute(
                "DELETE FROM memory_vectors WHERE owner_type = 'fact' AND owner_id = ?", (fact_id,)
            )
            conn.execute(
                "DELETE FROM fact_links WHERE from_id = ? OR to_id = ?", (fact_id, fact_id)
            )
            conn.execute("DELETE FROM fact_entities WHERE fact_id = ?", (fact_id,))
            conn.execute("DELETE FROM observation_facts WHERE fact_id = ?", (fact_id,))
            drop_profile_source(conn, "source_fact_ids", fact_id)
            return n > 0

        return await self.db.write(op)

    # -- entities and links -------------------------------------------------

    async def attach_entities(self, fact_id: int, entities: list[tuple[str, str]]) -> None:
        def op(conn: Conn) -> None:
            for name, etype in entities:
                conn.execute(
                    "INSERT OR IGNORE INTO entities (name, type) VALUES (?, ?)", (name, etype)
                )
                eid = conn.execute(
                    "SELECT id FROM entities WHERE name = ? AND type = ?", (name, etype)
                ).fetchone()[0]
                conn.execute(
                    "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id) VALUES (?, ?)",
                    (fact_id, eid),
                )

        await self.db.write(op)

    async def add_link(self, from_id: int, to_id: int, link_type: str, weight: float) -> None:
        await self.db.write(lambda conn: _link(conn, from_id, to_id, link_type, weight))

    async def entities_of(self, fact_id: int) -> list[EntityRow]:
        def op(conn: Conn) -> list[EntityRow]:
            rows = conn.execute(
                "SELECT e.id, e.name, e.type FROM entities e JOIN fact_entities fe"
                " ON fe.entity_id = e.id WHERE fe.fact_id = ? ORDER BY e.name",
                (fact_id,),
            ).fetchall()
            return [EntityRow(**dict(r)) for r in rows]

        return await self.db.read(op)

    async def linked(self, fact_id: int) -> list[LinkedFactRow]:
        def op(conn: Conn) -> list[LinkedFactRow]:
            rows = conn.execute(
                "SELECT f.id, f.text, l.link_type, l.weight FROM fact_links l"
                " JOIN facts f ON f.id = CASE WHEN l.from_id = ? THEN l.to_id ELSE l.from_id END"
                " WHERE l.from_id = ? OR l.to_id = ? ORDER BY l.weight DESC",
                (fact_id, fact_id, fact_id),
            ).fetchall()
            return [LinkedFactRow(**dict(r)) for r in rows]

        return await self.db.read(op)
