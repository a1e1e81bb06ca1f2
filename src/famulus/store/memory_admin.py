"""SQL for memory-wide questions: stats, clear, and the drift audit.

The audit reads the full-text index itself (through fts5vocab tables) rather
than trusting the triggers, so a missing or orphaned index row shows up even
if someone edited the database by hand.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from famulus.store.db import Database
from famulus.store.memory import text_hash

Conn = sqlite3.Connection

_CLEAR_ORDER = (
    ("facts", "facts"),
    ("observations", "observations"),
    ("profile_entries", "profile"),
    ("dreams", "dreams"),
    ("learning_events", "learning_events"),
    ("learning_candidates", "learning_candidates"),
    ("entities", "entities"),
    ("fact_links", "links"),
    ("memory_vectors", "vectors"),
    ("memory_access_events", "access_events"),
)


class MemoryAdminStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def stats(self) -> dict[str, int]:
        def op(conn: Conn) -> dict[str, int]:
            def count(sql: str) -> int:
                return int(conn.execute(sql).fetchone()[0])

            return {
                "fact_count": count("SELECT COUNT(*) FROM facts WHERE archived_at IS NULL"),
                "observation_count": count(
                    "SELECT COUNT(*) FROM observations WHERE archived_at IS NULL"
                ),
                "profile_count": count(
                    "SELECT COUNT(*) FROM profile_entries WHERE archived_at IS NULL"
                ),
                "dream_count": count("SELECT COUNT(*) FROM dreams"),
            }

        return await self.db.read(op)

    async def clear(self) -> dict[str, int]:
        def op(conn: Conn) -> dict[str, int]:
            deleted: dict[str, int] = {}
            for table, label in _CLEAR_ORDER:
                deleted[label] = conn.execute(f"DELETE FROM {table}").rowcount
            for table in ("fact_entities", "observation_facts", "memory_extraction_state"):
                conn.execute(f"DELETE FROM {table}")
            return deleted

        return await self.db.write(op)

    async def audit(self, model: str) -> dict[str, Any]:
        # On the writer: FTS5's integrity-check is an INSERT command, which a
        # read-only connection refuses even though it changes nothing.
        return await self.db.write(lambda conn: _audit(conn, model))


def _audit(conn: Conn, model: str) -> dict[str, Any]:
    return {
        "facts": _owner_audit(conn, "fact", "facts", "text", model),
        "observations": _owner_audit(conn, "observation", "observations", "summary", model),
        "orphan_links": _scalar(
            conn,
            "SELECT COUNT(*) FROM fact_links WHERE from_id NOT IN (SELECT id FROM facts)"
            " OR to_id NOT IN (SELECT id FROM facts)",
        ),
        "orphan_entity_links": _scalar(
            conn,
            "SELECT COUNT(*) FROM fact_entities WHERE fact_id NOT IN (SELECT id FROM facts)"
            " OR entity_id NOT IN (SELECT id FROM entities)",
        ),
        "orphan_observation_links": _scalar(
            conn,
            "SELECT COUNT(*) FROM observation_facts WHERE fact_id NOT IN (SELECT id FROM facts)",
        ),
    }


def _owner_audit(conn: Conn, owner: str, table: str, column: str, model: str) -> dict[str, Any]:
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
    return {
        "total": len(rows),
        "active_ids": sorted(rows),
        "without_embedding": sorted(i for i in rows if i not in vectors),
        "stale_embedding": sorted(
            i for i, text in rows.items() if i in vectors and vectors[i] != text_hash(text)
        ),
        "orphan_embedding": sorted(i for i in vectors if i not in rows),
        "fts_missing": sorted(i for i in all_ids if i not in indexed),
        "fts_orphan": sorted(i for i in indexed if i not in all_ids),
        "fts_consistent": _fts_consistent(conn, f"{table}_fts"),
    }


def _fts_consistent(conn: Conn, fts: str) -> bool:
    """FTS5's own check of the index against the content table (catches stale rows)."""
    try:
        conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError:
        return False
    return True


def _scalar(conn: Conn, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])
