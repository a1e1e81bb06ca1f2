"""Observations: patterns drawn from several facts, with the facts behind them."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from famulus.store.db import Database
from famulus.store.memory.common import Conn, drop_profile_source
from famulus.store.memory.facts import FactRow, fact_row
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class ObservationRow:
    id: int
    summary: str
    evidence_count: int
    created_at: str
    updated_at: str
    archived_at: str | None


_SELECT = (
    "SELECT o.*, (SELECT COUNT(*) FROM observation_facts f WHERE f.observation_id = o.id)"
    " AS evidence_count FROM observations o"
)


def _obs(row: sqlite3.Row) -> ObservationRow:
    return ObservationRow(**dict(row))


def _get(conn: Conn, obs_id: int) -> ObservationRow | None:
    row = conn.execute(f"{_SELECT} WHERE o.id = ?", (obs_id,)).fetchone()
    return _obs(row) if row else None


class ObservationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert(self, summary: str, fact_ids: list[int]) -> ObservationRow:
        now = now_iso()

        def op(conn: Conn) -> ObservationRow:
            cur = conn.execute(
                "INSERT INTO observations (summary, created_at, updated_at) VALUES (?, ?, ?)",
                (summary, now, now),
            )
            oid = int(cur.lastrowid or 0)
            conn.executemany(
                "INSERT OR IGNORE INTO observation_facts (observation_id, fact_id) VALUES (?, ?)",
                [(oid, f) for f in fact_ids],
            )
            return _get(conn, oid)  # type: ignore[return-value]

        return await self.db.write(op)

    async def get(self, obs_id: int) -> ObservationRow | None:
        return await self.db.read(lambda conn: _get(conn, obs_id))

    async def by_ids(self, ids: list[int]) -> dict[int, ObservationRow]:
        if not ids:
            return {}

        def op(conn: Conn) -> dict[int, ObservationRow]:
            marks = ",".join("?" * len(ids))
            rows = conn.execute(f"{_SELECT} WHERE o.id IN ({marks})", ids).fetchall()
            return {r["id"]: _obs(r) for r in rows}

        return await self.db.read(op)

    async def page(self, limit: int, offset: int) -> tuple[list[ObservationRow], int]:
        def op(conn: Conn) -> tuple[list[ObservationRow], int]:
            total = conn.execute(
                "SELECT COUNT(*) FROM observations WHERE archived_at IS NULL"
            ).fetchone()[0]
            rows = conn.execute(
                f"{_SELECT} WHERE o.archived_at IS NULL ORDER BY o.updated_at DESC, o.id DESC"
                " LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            return [_obs(r) for r in rows], int(total)

        return await self.db.read(op)

    async def update(self, obs_id: int, summary: str) -> ObservationRow | None:
        def op(conn: Conn) -> ObservationRow | None:
            conn.execute(
                "UPDATE observations SET summary = ?, updated_at = ? WHERE id = ?",
                (summary, now_iso(), obs_id),
            )
            return _get(conn, obs_id)

        return await self.db.write(op)

    async def delete(self, obs_id: int) -> bool:
        def op(conn: Conn) -> bool:
            conn.execute(
                "DELETE FROM memory_vectors WHERE owner_type = 'observation' AND owner_id = ?",
                (obs_id,),
            )
            drop_profile_source(conn, "source_observation_ids", obs_id)
            return conn.execute("DELETE FROM observations WHERE id = ?", (obs_id,)).rowcount > 0

        return await self.db.write(op)

    async def supporting_facts(self, obs_id: int) -> list[FactRow]:
        def op(conn: Conn) -> list[FactRow]:
            rows = conn.execute(
                "SELECT f.* FROM facts f JOIN observation_facts o ON o.fact_id = f.id"
                " WHERE o.observation_id = ? ORDER BY f.id",
                (obs_id,),
            ).fetchall()
            return [fact_row(r) for r in rows]

        return await self.db.read(op)
