"""SQL for queued chat messages: accepted (202) but not yet in history.

The row exists from just before the 202 until the message reaches history (or
is withdrawn); the move is one transaction, so a message is always in exactly
one of the two. The history row keeps the message's ``client_id`` in its
``meta``, so a withdrawal can tell "taken in" from "never queued".
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from famulus.store.db import Database
from famulus.store.sessions import MessageRow, insert_message
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class PendingRow:
    id: int
    session_id: str
    run_id: str
    content: str
    images: list[dict[str, Any]] | None
    client_id: str | None


def _pending(row: sqlite3.Row) -> PendingRow:
    return PendingRow(
        id=row["id"],
        session_id=row["session_id"],
        run_id=row["run_id"],
        content=row["content"],
        images=json.loads(row["images"]) if row["images"] else None,
        client_id=row["client_id"],
    )


def _move(
    conn: sqlite3.Connection, pending_id: int, meta: dict[str, Any] | None
) -> MessageRow | None:
    row = conn.execute("SELECT * FROM pending_messages WHERE id = ?", (pending_id,)).fetchone()
    if row is None:
        return None
    conn.execute("DELETE FROM pending_messages WHERE id = ?", (pending_id,))
    p = _pending(row)
    if p.client_id is not None:
        meta = {**(meta or {}), "client_id": p.client_id}
    return insert_message(
        conn, p.session_id, "user", p.content, run_id=p.run_id, images=p.images, meta=meta
    )


class PendingStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(
        self,
        session_id: str,
        run_id: str,
        content: str,
        images: list[dict[str, Any]] | None,
        client_id: str | None,
    ) -> int:
        def op(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO pending_messages (session_id, run_id, content, images, client_id,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    run_id,
                    content,
                    json.dumps(images) if images else None,
                    client_id,
                    now_iso(),
                ),
            )
            return int(cur.lastrowid or 0)

        return await self.db.write(op)

    async def to_history(
        self, pending_id: int, meta: dict[str, Any] | None = None
    ) -> MessageRow | None:
        """Move one queued message into history (None if it already left)."""
        return await self.db.write(lambda conn: _move(conn, pending_id, meta))

    async def drop(self, pending_id: int) -> None:
        await self.db.write(
            lambda conn: conn.execute("DELETE FROM pending_messages WHERE id = ?", (pending_id,))
        )

    async def waiting(self, session_id: str, client_id: str) -> PendingRow | None:
        """The oldest message of the session queued under ``client_id`` and not yet
        in history."""

        def op(conn: sqlite3.Connection) -> PendingRow | None:
            row = conn.execute(
                "SELECT * FROM pending_messages WHERE session_id = ? AND client_id = ?"
                " ORDER BY id LIMIT 1",
                (session_id, client_id),
            ).fetchone()
            return _pending(row) if row else None

        return await self.db.read(op)

    async def taken_in(self, session_id: str, client_id: str) -> bool:
        """Whether a message queued under ``client_id`` reached the session's history."""

        def op(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT 1 FROM messages WHERE session_id = ? AND role = 'user'"
                " AND json_extract(meta, '$.client_id') = ? LIMIT 1",
                (session_id, client_id),
            ).fetchone()
            return row is not None

        return await self.db.read(op)

    async def recover(self, meta: dict[str, Any]) -> list[MessageRow]:
        """Start-up: every message a dead process accepted but never took in goes
        into history, in the order it was sent."""

        def op(conn: sqlite3.Connection) -> list[MessageRow]:
            ids = [r["id"] for r in conn.execute("SELECT id FROM pending_messages ORDER BY id")]
            moved = [_move(conn, i, meta) for i in ids]
            return [m for m in moved if m is not None]

        return await self.db.write(op)
