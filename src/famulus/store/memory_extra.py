"""SQL for the profile, dreams, learning, access events, audit, stats and clear.

Rows are returned as plain dicts shaped like the contract's objects; JSON
columns (id lists, data) are decoded here so no caller sees a JSON string.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from famulus.store.db import Database
from famulus.timeutil import now_iso

Conn = sqlite3.Connection

_JSON_COLUMNS = (
    "source_fact_ids",
    "source_observation_ids",
    "evidence_event_ids",
    "data",
    "applied_state",
)


def _row(row: sqlite3.Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    data = dict(row)
    for key in _JSON_COLUMNS:
        if key in data and isinstance(data[key], str):
            data[key] = json.loads(data[key])
    return data


def _rows(rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    return [r for r in (_row(x) for x in rows) if r is not None]


class MemoryExtraStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- profile ------------------------------------------------------------

    async def insert_profile(
        self, kind: str, summary: str, fact_ids: list[int], obs_ids: list[int], confidence: float
    ) -> dict[str, Any]:
        now = now_iso()

        def op(conn: Conn) -> dict[str, Any]:
            cur = conn.execute(
                "INSERT INTO profile_entries (kind, summary, source_fact_ids,"
                " source_observation_ids, confidence, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (kind, summary, json.dumps(fact_ids), json.dumps(obs_ids), confidence, now, now),
            )
            return _profile(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def get_profile(self, entry_id: int) -> dict[str, Any] | None:
        return await self.db.read(lambda conn: _profile(conn, entry_id))

    async def list_profile(self, *, include_archived: bool = False) -> list[dict[str, Any]]:
        where = "" if include_archived else " WHERE archived_at IS NULL"
        return await self.db.read(
            lambda conn: _rows(
                conn.execute(f"SELECT * FROM profile_entries{where} ORDER BY id").fetchall()
            )
        )

    async def update_profile(self, entry_id: int, **fields: Any) -> dict[str, Any] | None:
        values = {
            k: (json.dumps(v) if k in _JSON_COLUMNS else v)
            for k, v in fields.items()
            if v is not None or k == "archived_at"
        }

        def op(conn: Conn) -> dict[str, Any] | None:
            if values:
                sets = ", ".join(f"{k} = ?" for k in values)
                conn.execute(
                    f"UPDATE profile_entries SET {sets}, updated_at = ? WHERE id = ?",
                    [*values.values(), now_iso(), entry_id],
                )
            return _profile(conn, entry_id)

        return await self.db.write(op)

    async def delete_profile_row(self, entry_id: int) -> None:
        await self.db.write(
            lambda conn: conn.execute("DELETE FROM profile_entries WHERE id = ?", (entry_id,))
        )

    # -- dreams -------------------------------------------------------------

    async def insert_dream(self, bridge: str, insight: str, fact_ids: list[int]) -> dict[str, Any]:
        def op(conn: Conn) -> dict[str, Any]:
            cur = conn.execute(
                "INSERT INTO dreams (bridge, insight, source_fact_ids, created_at)"
                " VALUES (?, ?, ?, ?)",
                (bridge, insight, json.dumps(fact_ids), now_iso()),
            )
            row = conn.execute("SELECT * FROM dreams WHERE id = ?", (cur.lastrowid,)).fetchone()
            return _row(row)  # type: ignore[return-value]

        return await self.db.write(op)

    async def list_dreams(self, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        def op(conn: Conn) -> tuple[list[dict[str, Any]], int]:
            total = conn.execute("SELECT COUNT(*) FROM dreams").fetchone()[0]
            rows = conn.execute(
                "SELECT * FROM dreams ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
            return _rows(rows), int(total)

        return await self.db.read(op)

    async def get_dream(self, dream_id: int) -> dict[str, Any] | None:
        return await self.db.read(
            lambda conn: _row(
                conn.execute("SELECT * FROM dreams WHERE id = ?", (dream_id,)).fetchone()
            )
        )

    async def delete_dream(self, dream_id: int) -> bool:
        return await self.db.write(
            lambda conn: conn.execute("DELETE FROM dreams WHERE id = ?", (dream_id,)).rowcount > 0
        )

    # -- learning -----------------------------------------------------------

    async def insert_event(
        self,
        kind: str,
        summary: str,
        session_id: str | None,
        run_id: str | None,
        data: dict[str, Any],
    ) -> dict[str, Any]:
        def op(conn: Conn) -> dict[str, Any]:
            cur = conn.execute(
                "INSERT INTO learning_events (kind, summary, session_id, run_id, data, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (kind, summary, session_id, run_id, json.dumps(data), now_iso()),
            )
            row = conn.execute(
                "SELECT * FROM learning_events WHERE id = ?", (cur.lastrowid,)
            ).fetchone()
            return _row(row)  # type: ignore[return-value]

        return await self.db.write(op)

    async def list_events(
        self, limit: int, offset: int, kind: str | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        where, params = (" WHERE kind = ?", [kind]) if kind else ("", [])

        def op(conn: Conn) -> tuple[list[dict[str, Any]], int]:
            total = conn.execute(f"SELECT COUNT(*) FROM learning_events{where}", params)
            rows = conn.execute(
                f"SELECT * FROM learning_events{where} ORDER BY id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return _rows(rows), int(total.fetchone()[0])

        return await self.db.read(op)

    async def events_without_candidate(self) -> list[dict[str, Any]]:
        """Events that no candidate cites yet: the evidence a proposal round reads."""

        def op(conn: Conn) -> list[dict[str, Any]]:
            used: set[int] = set()
            for (ids,) in conn.execute("SELECT evidence_event_ids FROM learning_candidates"):
                used.update(json.loads(ids))
            rows = conn.execute("SELECT * FROM learning_events ORDER BY id").fetchall()
            return [r for r in _rows(rows) if r["id"] not in used]

        return await self.db.read(op)

    async def insert_candidate(
        self,
        change_type: str,
        target_key: str,
        proposal: str,
        rationale: str,
        evidence: list[int],
    ) -> dict[str, Any]:
        now = now_iso()

        def op(conn: Conn) -> dict[str, Any]:
            cur = conn.execute(
                "INSERT INTO learning_candidates (change_type, target_key, proposal, rationale,"
                " evidence_event_ids, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (change_type, target_key, proposal, rationale, json.dumps(evidence), now, now),
            )
            return _candidate(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def get_candidate(self, cand_id: int) -> dict[str, Any] | None:
        return await self.db.read(lambda conn: _candidate(conn, cand_id))

    async def list_candidates(
        self, status: str | None, limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        where, params = (" WHERE status = ?", [status]) if status else ("", [])

        def op(conn: Conn) -> tuple[list[dict[str, Any]], int]:
            total = conn.execute(f"SELECT COUNT(*) FROM learning_candidates{where}", params)
            rows = conn.execute(
                f"SELECT * FROM learning_candidates{where} ORDER BY id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return _rows(rows), int(total.fetchone()[0])

        return await self.db.read(op)

    async def set_candidate_status(
        self, cand_id: int, expect: str, status: str, **fields: Any
    ) -> dict[str, Any] | None:
        """Compare-and-set: None when the status was no longer ``expect``."""
        values = {k: (json.dumps(v) if k in _JSON_COLUMNS else v) for k, v in fields.items()}

        def op(conn: Conn) -> dict[str, Any] | None:
            sets = "".join(f", {k} = ?" for k in values)
            n = conn.execute(
                f"UPDATE learning_candidates SET status = ?, updated_at = ?{sets}"
                " WHERE id = ? AND status = ?",
                [status, now_iso(), *values.values(), cand_id, expect],
            ).rowcount
            return _candidate(conn, cand_id) if n else None

        return await self.db.write(op)

    # -- access events and extraction state ---------------------------------

    async def record_access(
        self, session_id: str | None, query: str, items: list[tuple[str, int, str, float]]
    ) -> None:
        """items: (owner_type, owner_id, action, score)."""
        if not items:
            return
        now = now_iso()
        await self.db.write(
            lambda conn: conn.executemany(
                "INSERT INTO memory_access_events (session_id, query, owner_type, owner_id,"
                " action, score, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(session_id, query[:2000], t, i, a, s, now) for t, i, a, s in items],
            )
        )

    async def access_events(self, limit: int = 100) -> list[dict[str, Any]]:
        return await self.db.read(
            lambda conn: _rows(
                conn.execute(
                    "SELECT * FROM memory_access_events ORDER BY id DESC LIMIT ?", (limit,)
                ).fetchall()
            )
        )

    async def extraction_mark(self, session_id: str) -> int:
        def op(conn: Conn) -> int:
            row = conn.execute(
                "SELECT last_message_id FROM memory_extraction_state WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            return int(row[0]) if row else 0

        return await self.db.read(op)

    async def sessions_past_mark(self) -> list[str]:
        """Chat sessions with user or assistant messages not yet read by extraction
        (start-up: a quiet timer that was waiting when the server stopped)."""

        def op(conn: Conn) -> list[str]:
            rows = conn.execute(
                "SELECT s.id FROM sessions s"
                " LEFT JOIN memory_extraction_state e ON e.session_id = s.id"
                " WHERE s.origin = 'chat' AND s.archived_at IS NULL AND EXISTS ("
                "   SELECT 1 FROM messages m WHERE m.session_id = s.id"
                "   AND m.role IN ('user', 'assistant') AND m.id > COALESCE(e.last_message_id, 0))"
            ).fetchall()
            return [str(r[0]) for r in rows]

        return await self.db.read(op)

    async def last_message_id(self, session_id: str) -> int:
        def op(conn: Conn) -> int:
            row = conn.execute(
                "SELECT MAX(id) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            return int(row[0] or 0)

        return await self.db.read(op)

    async def set_extraction_mark(self, session_id: str, message_id: int) -> None:
        await self.db.write(
            lambda conn: conn.execute(
                "INSERT INTO memory_extraction_state (session_id, last_message_id, updated_at)"
                " VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " last_message_id = excluded.last_message_id, updated_at = excluded.updated_at",
                (session_id, message_id, now_iso()),
            )
        )


def _profile(conn: Conn, entry_id: int) -> dict[str, Any] | None:
    return _row(conn.execute("SELECT * FROM profile_entries WHERE id = ?", (entry_id,)).fetchone())


def _candidate(conn: Conn, cand_id: int) -> dict[str, Any] | None:
    return _row(
        conn.execute("SELECT * FROM learning_candidates WHERE id = ?", (cand_id,)).fetchone()
    )
