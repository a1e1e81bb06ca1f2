"""SQL for small JSON settings kept in the database (directives, config choices)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from famulus.store.db import Database
from famulus.timeutil import now_iso


class KVStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, key: str, default: Any = None) -> Any:
        def op(conn: sqlite3.Connection) -> Any:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else default

        return await self.db.read(op)

    async def set(self, key: str, value: Any) -> None:
        payload = json.dumps(value)
        now = now_iso()

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                (key, payload, now),
            )

        await self.db.write(op)

    async def delete(self, key: str) -> None:
        await self.db.write(lambda conn: conn.execute("DELETE FROM kv WHERE key = ?", (key,)))
