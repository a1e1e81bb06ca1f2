"""SQL for small JSON settings kept in the database (directives, config choices).

Every chat turn reads several of these (directives, whether memory is on,
which web backend), and they change only through this class, so the stored
text is cached here: a set or delete replaces the cached entry, and a read
that raced with a write does not put its older value back (the generation
check). Values are decoded from the cached text on every get, so a caller that
changes what it got cannot change the cache.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from famulus.store.db import Database, WriteOp
from famulus.timeutil import now_iso


class KVStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: dict[str, str | None] = {}  # key -> stored JSON text (None: no row)
        self._generation = 0  # bumped by every write

    async def get(self, key: str, default: Any = None) -> Any:
        if key in self._cache:
            text = self._cache[key]
        else:
            text = await self._read(key)
        return default if text is None else json.loads(text)

    async def _read(self, key: str) -> str | None:
        generation = self._generation

        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
            return str(row[0]) if row else None

        text = await self.db.read(op)
        if generation == self._generation:  # no write began meanwhile
            self._cache[key] = text
        return text

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

        await self._write(key, op, payload)

    async def delete(self, key: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM kv WHERE key = ?", (key,))

        await self._write(key, op, None)

    async def _write(self, key: str, op: WriteOp, stored: str | None) -> None:
        self._generation += 1
        self._cache.pop(key, None)
        try:
            await self.db.write(op)
        finally:
            self._generation += 1
        self._cache[key] = stored
