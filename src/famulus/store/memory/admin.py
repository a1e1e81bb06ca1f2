"""Memory-wide questions: stats, clear, and the drift audit.

The audit reads the full-text index itself (through fts5vocab tables) rather
than trusting the triggers, so a missing or orphaned index row shows up even
if someone edited the database by hand.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields

from famulus.store.db import Database
from famulus.store.memory.common import Conn, text_hash


@dataclass(frozen=True)
class MemoryStats:
    fact_count: int
    observation_count: int
    profile_count: int
    dream_count: int


@dataclass(frozen=True)
class Cleared:
    """Rows deleted per kind by a clear."""

    facts: int
    observations: int
    profile: int
    dreams: int
    learning_events: int
    learning_candidates: int
    entities: int
    links: int
    vectors: int
    access_events: int


_CLEARED_TABLES = {
    "facts": "facts",
    "observations": "observations",
    "profile": "profile_entries",
    "dreams": "dreams",
    "learning_events": "learning_events",
    "learning_candidates": "learning_candidates",
    "entities": "entities",
    "links": "fact_links",
    # Message vectors belong to the conversation index, which follows the
    # sessions (deleted with them), not to what clearing memory forgets.
    "vectors": "memory_vectors WHERE owner_type != 'message'",
    "access_events": "memory_access_events",
}


@dataclass(frozen=True)
class TableAudit:
    """One of facts/observations against its vectors and full-text index (ids)."""

    active_ids: list[int]
    without_embedding: list[int]
    stale_embedding: list[int]
    orphan_embedding: list[int]
    fts_missing: list[int]
    fts_orphan: list[int]
    fts_consistent: bool


@dataclass(frozen=True)
class AuditRow:
    facts: TableAudit
    observations: TableAudit
    orphan_links: int
    orphan_entity_links: int
    orphan_observation_links: int


class AdminStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def stats(self) -> MemoryStats:
        def op(conn: Conn) -> MemoryStats:
            return MemoryStats(
                fact_count=_scalar(conn, "SELECT COUNT(*) FROM facts WHERE archived_at IS NULL"),
                observation_count=_scalar(
                    conn, "SELECT COUNT(*) FROM observations WHERE archived_at IS NULL"
                ),
                profile_count=_scalar(
                    conn, "SELECT COUNT(*) FROM profile_entries WHERE archived_at IS NULL"
                ),
                dream_count=_scalar(conn, "SELECT COUNT(*) FROM dreams"),
            )

        return await self.db.read(op)

    async def clear(self) -> Cleared:
        def op(conn: Conn) -> Cleared:
            deleted = {
                f.name: conn.execute(f"DELETE FROM {_CLEARED_TABLES[f.name]}").rowcount
                for f in fields(Cleared)
            }
            for table in ("fact_entities", "observation_facts", "memory_extraction_state"):
                conn.execute(f"DELETE FROM {table}")
            return Cleared(**deleted)

        return await self.db.write(op)

    async def audit(self, model: str) -> AuditRow:
        # On the writer: FTS5's integrity-check is an INSERT command, which a
        # read-only connection refuses even though it changes nothing.
        return await self.db.write(lambda conn: _audit(conn, model))


def _audit(conn: Conn, model: str) -> AuditRow:
    return AuditRow(
        facts=_table_audit(conn, "fact", "facts", "text", model),
        observations=_table_audit(conn, "observation", "observations", "summary", model),
        orphan_links=_scalar(
            conn,
            "SELECT COUNT(*) FROM fact_links WHERE from_id NOT IN (SELECT id FROM facts)"
            " OR to_id NOT IN (SELECT id FROM facts)",
        ),
        orphan_entity_links=_scalar(
            conn,
            "SELECT COUNT(*) FROM fact_entities WHERE fact_id NOT IN (SELECT id FROM facts)"
            " OR entity_id NOT IN (SELECT id FROM entities)",
        ),
        orphan_observation_links=_scalar(
            conn,
            "SELECT COUNT(*) FROM observation_facts WHERE fact_id NOT IN (SELECT id FROM facts)",
        ),
    )


def _table_audit(conn: Conn, owner: str, table: str, column: str, model: str) -> TableAudit:
    rows = {
        int(r[0]): str(r[1])
        for r in conn.execute(f"SELECT id, {column} FROM {table} WHERE archived_at IS NULL")
    }
    all_ids = {int(r[0]) for r in conn.execute(f"SELECT id FROM {table}")}
    vectors = {
        int(r[0]): str(r[1])
        for r in conn.execute(
            "SELECT owner_id, text_hash FROM memory_vectors WHERE owner_type = ? AND model = ?",
            (owner, model),
        )
    }
    indexed = {int(r[0]) for r in conn.execute(f"SELECT DISTINCT doc FROM {table}_fts_instance")}
    return TableAudit(
        active_ids=sorted(rows),
        without_embedding=sorted(i for i in rows if i not in vectors),
        stale_embedding=sorted(
            i for i, text in rows.items() if i in vectors and vectors[i] != text_hash(text)
        ),
        orphan_embedding=sorted(i for i in vectors if i not in rows),
        fts_missing=sorted(i for i in all_ids if i not in indexed),
        fts_orphan=sorted(i for i in indexed if i not in all_ids),
        fts_consistent=_fts_consistent(conn, f"{table}_fts"),
    )


def _fts_consistent(conn: Conn, fts: str) -> bool:
    """FTS5's own check of the index against the content table (catches stale rows)."""
    try:
        conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError:
        return False
    return True


def _scalar(conn: Conn, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])
