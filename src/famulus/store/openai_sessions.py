"""SQL for the OpenAI-compatible endpoint: the session each user or client maps to."""

from __future__ import annotations

import sqlite3

from famulus.store.db import Database
from famulus.timeutil import now_iso


class OpenAISessionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, client_key: str) -> str | None:
        """The session id ``client_key`` maps to, or None."""

        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT session_id FROM openai_sessions WHERE client_key = ?", (client_key,)
            ).fetchone()
            return str(row[0]) if row else None

        return await self.db.read(op)

    async def put(self, client_key: str, session_id: str) -> None:
        """Map ``client_key`` to ``session_id``, replacing an earlier mapping."""
        now = now_iso()
        await self.db.write(
            lambda conn: conn.execute(
                "INSERT INTO openai_sessions (client_key, session_id, created_at)"
                " VALUES (?, ?, ?) ON CONFLICT (client_key) DO UPDATE SET"
                " session_id = excluded.session_id, created_at = excluded.created_at",
                (client_key, session_id, now),
            )
        )
