"""SQL for the per-session event log.

Sequence numbers are assigned inside the single writer thread as
``max(seq) + 1``, so they are gap-free and strictly increasing per session.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from famulus.errors import NotFound
from famulus.store.db import Database, WriteOp
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class EventRow:
    session_id: str
    seq: int
    type: str
    data: dict[str, Any]
    created_at: str


class SessionGone(NotFound):
    """The session was deleted while a request or run was still writing to it
    (a race the caller lost); answered like any unknown session."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"No session with id '{session_id}' (it was just deleted).")


class EventStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def append(
        self,
        session_id: str,
        type_: str,
        data: dict[str, Any],
        *,
        with_ops: Sequence[WriteOp] = (),
    ) -> EventRow:
        """Append one event; ``with_ops`` (the state change it announces) run first in
        the same transaction, so the change and its event are kept or lost together."""
        now = now_iso()
        run_id = data.get("run_id")

        def op(conn: sqlite3.Connection) -> EventRow:
            if (
                conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                is None
            ):
                raise SessionGone(session_id)
            for extra in with_ops:
                extra(conn)
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO events (session_id, seq, type, run_id, data, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, seq, type_, run_id, json.dumps(data), now),
            )
            return EventRow(session_id, seq, type_, data, now)

        return await self.db.write(op)

    async def after(self, session_id: str, after_seq: int, limit: int = 1000) -> list[EventRow]:
        def op(conn: sqlite3.Connection) -> list[EventRow]:
            rows = conn.execute(
                "SELECT seq, type, data, created_at FROM events"
                " WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, after_seq, limit),
            ).fetchall()
            return [
                EventRow(session_id, r["seq"], r["type"], json.loads(r["data"]), r["created_at"])
                for r in rows
            ]

        return await self.db.read(op)

    async def live_start(self, session_id: str, run_ids: list[str]) -> int:
        """Where a stream without a cursor begins: just before the earliest
        ``run_started`` of ``run_ids`` (runs still in progress), else at the end."""

        def op(conn: sqlite3.Connection) -> int:
            if run_ids:
                marks = ",".join("?" * len(run_ids))
                row = conn.execute(
                    "SELECT MIN(seq) FROM events WHERE session_id = ? AND type = 'run_started'"
                    f" AND run_id IN ({marks})",
                    (session_id, *run_ids),
                ).fetchone()
                if row[0] is not None:
                    return int(row[0]) - 1
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()
            return int(row[0])

        return await self.db.read(op)

    async def last_seq(self, session_id: str) -> int:
        return await self.db.read(
            lambda conn: conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
        )
