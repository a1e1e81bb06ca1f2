"""What one recall reads from the full-text index, and the use it records.

A chat turn's recall is recorded in one transaction: the access events of
every candidate (retrieved, injected, omitted) and the access count of each
injected fact, so the log and the counts never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from famulus.store.db import Database
from famulus.store.memory.common import Conn, fts_all_query, fts_query
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class AccessEventRow:
    id: int
    session_id: str | None
    query: str
    owner_type: str
    owner_id: int
    action: str
    score: float | None
    created_at: str


@dataclass(frozen=True)
class AccessEvent:
    """One candidate of a recall and what became of it."""

    owner_type: str  # fact | observation
    owner_id: int
    action: str  # retrieved | injected | omitted
    score: float


def _fts(conn: Conn, table: str, base: str, expr: str, k: int) -> list[int]:
    rows = conn.execute(
        f"SELECT b.id FROM {table} JOIN {base} b ON b.id = {table}.rowid"
        f" WHERE {table} MATCH ? AND b.archived_at IS NULL ORDER BY {table}.rank LIMIT ?",
        (expr, k),
    ).fetchall()
    return [int(r[0]) for r in rows]


class RecallStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def fts_candidates(self, query: str, k: int) -> tuple[list[int], list[int]]:
        """Active fact and observation ids matching ``query``, best first, read in one go."""
        expr = fts_query(query)
        if not expr:
            return [], []
        return await self.db.read(
            lambda conn: (
                _fts(conn, "facts_fts", "facts", expr, k),
                _fts(conn, "observations_fts", "observations", expr, k),
            )
        )

    async def facts_with_all(self, text: str, k: int) -> list[int]:
        """Active facts whose text holds every word of ``text`` (at most ``k``)."""
        expr = fts_all_query(text)
        if not expr:
            return []
        return await self.db.read(lambda conn: _fts(conn, "facts_fts", "facts", expr, k))

    async def record(self, session_id: str | None, query: str, events: list[AccessEvent]) -> None:
        """Log the recall's access events and count each injected fact as used."""
        if not events:
            return
        now = now_iso()
        used = [e.owner_id for e in events if e.owner_type == "fact" and e.action == "injected"]

        def op(conn: Conn) -> None:
            conn.executemany(
                "INSERT INTO memory_access_events (session_id, query, owner_type, owner_id,"
                " action, score, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (session_id, query[:2000], e.owner_type, e.owner_id, e.action, e.score, now)
                    for e in events
                ],
            )
            conn.executemany(
                "UPDATE facts SET access_count = access_count + 1, last_accessed_at = ?"
                " WHERE id = ?",
                [(now, i) for i in used],
            )

        await self.db.write(op)

    async def access_events(self, limit: int = 100) -> list[AccessEventRow]:
        return await self.db.read(
            lambda conn: [
                AccessEventRow(**dict(r))
                for r in conn.execute(
                    "SELECT * FROM memory_access_events ORDER BY id DESC LIMIT ?", (limit,)
                )
            ]
        )
