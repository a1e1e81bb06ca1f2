"""SQL for calendar-triggered automations: the occurrences that have fired."""

from __future__ import annotations

import sqlite3

from famulus.store.db import Database
from famulus.timeutil import now_iso


class CalendarFiredStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim(self, automation_id: int, event_uid: str, event_start: str) -> bool:
        """Record that the automation fires for this occurrence; False if it already did."""
        now = now_iso()

        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "INSERT OR IGNORE INTO calendar_fired"
                " (automation_id, event_uid, event_start, fired_at) VALUES (?, ?, ?, ?)",
                (automation_id, event_uid, event_start, now),
            )
            return cur.rowcount > 0

        return await self.db.write(op)

    async def release(self, automation_id: int, event_uid: str, event_start: str) -> None:
        """Undo a claim whose run could not start."""
        await self.db.write(
            lambda conn: conn.execute(
                "DELETE FROM calendar_fired"
                " WHERE automation_id = ? AND event_uid = ? AND event_start = ?",
                (automation_id, event_uid, event_start),
            )
        )

    async def fired(self, automation_id: int) -> set[tuple[str, str]]:
        """(event uid, event start) of every occurrence the automation fired for."""

        def op(conn: sqlite3.Connection) -> set[tuple[str, str]]:
            rows = conn.execute(
                "SELECT event_uid, event_start FROM calendar_fired WHERE automation_id = ?",
                (automation_id,),
            ).fetchall()
            return {(r[0], r[1]) for r in rows}

        return await self.db.read(op)

    async def prune(self, before: str) -> int:
        """Forget occurrences that started before ``before`` (UTC ISO)."""
        return await self.db.write(
            lambda conn: (
                conn.execute("DELETE FROM calendar_fired WHERE event_start < ?", (before,)).rowcount
            )
        )
