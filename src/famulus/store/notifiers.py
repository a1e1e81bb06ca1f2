"""SQL for notifier configs."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from famulus.store.db import Database
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class NotifierRow:
    name: str
    type: str
    config: dict[str, Any]
    created_at: str


def _row(r: sqlite3.Row) -> NotifierRow:
    return NotifierRow(r["name"], r["type"], json.loads(r["config"]), r["created_at"])


class NotifierStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, name: str, type_: str, config: dict[str, Any]) -> NotifierRow | None:
        """Insert; None when the name is taken."""
        now = now_iso()

        def op(conn: sqlite3.Connection) -> NotifierRow | None:
            cur = conn.execute(
                "INSERT OR IGNORE INTO notifiers (name, type, config, created_at) VALUES (?, ?, ?, ?)",
                (name, type_, json.dumps(config), now),
            )
            return NotifierRow(name, type_, config, now) if cur.rowcount else None

        return await self.db.write(op)

    async def get(self, name: str) -> NotifierRow | None:
        def op(conn: sqlite3.Connection) -> NotifierRow | None:
            r = conn.execute("SELECT * FROM notifiers WHERE name = ?", (name,)).fetchone()
            return _row(r) if r else None

        return await self.db.read(op)

    async def all(self) -> list[NotifierRow]:
        return await self.db.read(
            lambda conn: [_row(r) for r in conn.execute("SELECT * FROM notifiers ORDER BY name")]
        )

    async def update(self, name: str, type_: str, config: dict[str, Any]) -> NotifierRow | None:
        """Replace type and config; None when there is no such notifier."""

        def op(conn: sqlite3.Connection) -> NotifierRow | None:
            conn.execute(
                "UPDATE notifiers SET type = ?, config = ? WHERE name = ?",
                (type_, json.dumps(config), name),
            )
            r = conn.execute("SELECT * FROM notifiers WHERE name = ?", (name,)).fetchone()
            return _row(r) if r else None

        return await self.db.write(op)

    async def delete(self, name: str) -> bool:
        return await self.db.write(
            lambda conn: conn.execute("DELETE FROM notifiers WHERE name = ?", (name,)).rowcount > 0
        )
