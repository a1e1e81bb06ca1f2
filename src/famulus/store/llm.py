"""SQL for the llm area: custom model records (their keys live in the secrets file)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from famulus.store.db import Database
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class CustomModelRow:
    model_id: str
    base_url: str
    context_window: int
    max_output_tokens: int
    vision: bool
    created_at: str


def _row(r: sqlite3.Row) -> CustomModelRow:
    return CustomModelRow(
        model_id=r["model_id"],
        base_url=r["base_url"],
        context_window=int(r["context_window"]),
        max_output_tokens=int(r["max_output_tokens"]),
        vision=bool(r["vision"]),
        created_at=r["created_at"],
    )


def custom_models(conn: sqlite3.Connection) -> list[CustomModelRow]:
    """Every custom model, oldest first (also read by ``famulus doctor``)."""
    rows = conn.execute("SELECT * FROM llm_custom_models ORDER BY created_at, model_id")
    return [_row(r) for r in rows]


class CustomModelStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def list(self) -> list[CustomModelRow]:
        return await self.db.read(custom_models)

    async def get(self, model_id: str) -> CustomModelRow | None:
        def op(conn: sqlite3.Connection) -> CustomModelRow | None:
            r = conn.execute(
                "SELECT * FROM llm_custom_models WHERE model_id = ?", (model_id,)
            ).fetchone()
            return _row(r) if r else None

        return await self.db.read(op)

    async def add(
        self,
        model_id: str,
        base_url: str,
        context_window: int,
        max_output_tokens: int,
        vision: bool,
    ) -> bool:
        """Insert; returns False when the id already exists (the caller's 409)."""
        now = now_iso()

        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "INSERT OR IGNORE INTO llm_custom_models"
                " (model_id, base_url, context_window, max_output_tokens, vision, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (model_id, base_url, context_window, max_output_tokens, int(vision), now),
            )
            return cur.rowcount == 1

        return await self.db.write(op)

    async def remove(self, model_id: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM llm_custom_models WHERE model_id = ?", (model_id,))
            return cur.rowcount == 1

        return await self.db.write(op)
