"""How far extraction has read each session (a bookmark: the last message id)."""

from __future__ import annotations

from famulus.store.db import Database
from famulus.store.memory.common import Conn
from famulus.timeutil import now_iso


class ExtractionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def mark(self, session_id: str) -> int:
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

    async def set_mark(self, session_id: str, message_id: int) -> None:
        await self.db.write(
            lambda conn: conn.execute(
                "INSERT INTO memory_extraction_state (session_id, last_message_id, updated_at)"
                " VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " last_message_id = excluded.last_message_id, updated_at = excluded.updated_at",
                (session_id, message_id, now_iso()),
            )
        )
