"""The profile (curated entries always in the prompt) and dreams."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from enum import Enum
from typing import Any

from famulus.store.db import Database
from famulus.store.memory.common import Conn, ids
from famulus.timeutil import now_iso


class Keep(Enum):
    """Leave a nullable column as it is (None would clear it)."""

    KEEP = 0


@dataclass(frozen=True)
class ProfileRow:
    id: int
    kind: str
    summary: str
    source_fact_ids: list[int]
    source_observation_ids: list[int]
    confidence: float
    created_at: str
    updated_at: str
    archived_at: str | None


@dataclass(frozen=True)
class DreamRow:
    id: int
    bridge: str
    insight: str
    source_fact_ids: list[int]
    created_at: str


def _entry(row: sqlite3.Row) -> ProfileRow:
    data = dict(row)
    data["source_fact_ids"] = ids(data["source_fact_ids"])
    data["source_observation_ids"] = ids(data["source_observation_ids"])
    return ProfileRow(**data)


def _dream(row: sqlite3.Row) -> DreamRow:
    data = dict(row)
    data["source_fact_ids"] = ids(data["source_fact_ids"])
    return DreamRow(**data)


def _get_entry(conn: Conn, entry_id: int) -> ProfileRow | None:
    row = conn.execute("SELECT * FROM profile_entries WHERE id = ?", (entry_id,)).fetchone()
    return _entry(row) if row else None


def _get_dream(conn: Conn, dream_id: int) -> DreamRow | None:
    row = conn.execute("SELECT * FROM dreams WHERE id = ?", (dream_id,)).fetchone()
    return _dream(row) if row else None


class ProfileStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert(
        self, kind: str, summary: str, fact_ids: list[int], obs_ids: list[int], confidence: float
    ) -> ProfileRow:
        now = now_iso()

        def op(conn: Conn) -> ProfileRow:
            cur = conn.execute(
                "INSERT INTO profile_entries (kind, summary, source_fact_ids,"
                " source_observation_ids, confidence, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (kind, summary, json.dumps(fact_ids), json.dumps(obs_ids), confidence, now, now),
            )
            return _get_entry(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def get(self, entry_id: int) -> ProfileRow | None:
        return await self.db.read(lambda conn: _get_entry(conn, entry_id))

    async def entries(self, *, include_archived: bool = False) -> list[ProfileRow]:
        where = "" if include_archived else " WHERE archived_at IS NULL"
        return await self.db.read(
            lambda conn: [
                _entry(r) for r in conn.execute(f"SELECT * FROM profile_entries{where} ORDER BY id")
            ]
        )

    async def update(
        self,
        entry_id: int,
        *,
        kind: str | None = None,
        summary: str | None = None,
        source_fact_ids: list[int] | None = None,
        source_observation_ids: list[int] | None = None,
        confidence: float | None = None,
        archived_at: str | None | Keep = Keep.KEEP,
    ) -> ProfileRow | None:
        """Changes the fields given (None keeps a field, except ``archived_at``,
        where None restores the entry); None when the entry is gone."""
        values: dict[str, Any] = {
            "kind": kind,
            "summary": summary,
            "source_fact_ids": json.dumps(source_fact_ids) if source_fact_ids is not None else None,
            "source_observation_ids": (
                json.dumps(source_observation_ids) if source_observation_ids is not None else None
            ),
            "confidence": confidence,
        }
        values = {k: v for k, v in values.items() if v is not None}
        if not isinstance(archived_at, Keep):
            values["archived_at"] = archived_at

        def op(conn: Conn) -> ProfileRow | None:
            if values:
                sets = ", ".join(f"{k} = ?" for k in values)
                conn.execute(
                    f"UPDATE profile_entries SET {sets}, updated_at = ? WHERE id = ?",
                    [*values.values(), now_iso(), entry_id],
                )
            return _get_entry(conn, entry_id)

        return await self.db.write(op)

    async def delete(self, entry_id: int) -> None:
        await self.db.write(
            lambda conn: conn.execute("DELETE FROM profile_entries WHERE id = ?", (entry_id,))
        )

    # -- dreams -------------------------------------------------------------

    async def insert_dream(self, bridge: str, insight: str, fact_ids: list[int]) -> DreamRow:
        def op(conn: Conn) -> DreamRow:
            cur = conn.execute(
                "INSERT INTO dreams (bridge, insight, source_fact_ids, created_at)"
                " VALUES (?, ?, ?, ?)",
                (bridge, insight, json.dumps(fact_ids), now_iso()),
            )
            return _get_dream(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def dreams(self, limit: int, offset: int) -> tuple[list[DreamRow], int]:
        def op(conn: Conn) -> tuple[list[DreamRow], int]:
            total = conn.execute("SELECT COUNT(*) FROM dreams").fetchone()[0]
            rows = conn.execute(
                "SELECT * FROM dreams ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
            return [_dream(r) for r in rows], int(total)

        return await self.db.read(op)

    async def get_dream(self, dream_id: int) -> DreamRow | None:
        return await self.db.read(lambda conn: _get_dream(conn, dream_id))

    async def delete_dream(self, dream_id: int) -> bool:
        return await self.db.write(
            lambda conn: conn.execute("DELETE FROM dreams WHERE id = ?", (dream_id,)).rowcount > 0
        )
