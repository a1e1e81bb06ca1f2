"""SQL for the usage ledger: one row per model request, and the sums over it.

Sums are taken in SQL per UTC hour and handed back as such; putting hours
into the person's days (which needs their time zone) is the usage area's job.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from famulus.store.db import Database, WriteOp

# The group_by choices and the SQL expression each groups on.
GROUPINGS: dict[str, str] = {
    "day": "substr(u.ts, 1, 13)",  # the UTC hour; the caller folds hours into local days
    "model": "u.provider || ':' || u.model",
    "source": "u.source",
    "session": "u.session_id",
    "automation": "CAST(u.automation_id AS TEXT)",
}
_LABELS: dict[str, str] = {
    "session": "(SELECT name FROM sessions s WHERE s.id = u.session_id)",
    "automation": "(SELECT name FROM automations a WHERE a.id = u.automation_id)",
}


@dataclass(frozen=True)
class UsageEntry:
    ts: str
    source: str
    session_id: str | None
    run_id: str | None
    automation_id: int | None
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None
    priced_by: str | None
    estimated_input: int | None = None


@dataclass(frozen=True)
class UsageSum:
    """One group's totals; ``cost`` sums the known prices (None: none was known)."""

    key: str | None
    label: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost: float | None
    calls: int


@dataclass(frozen=True)
class LastRequest:
    ts: str
    input_tokens: int
    estimated_input: int | None


class UsageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add_op(self, e: UsageEntry) -> WriteOp:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO usage_ledger (ts, source, session_id, run_id, automation_id,"
                " provider, model, input_tokens, output_tokens, cache_read_tokens,"
                " cache_write_tokens, cost, priced_by, estimated_input)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    e.ts,
                    e.source,
                    e.session_id,
                    e.run_id,
                    e.automation_id,
                    e.provider,
                    e.model,
                    e.input_tokens,
                    e.output_tokens,
                    e.cache_read_tokens,
                    e.cache_write_tokens,
                    e.cost,
                    e.priced_by,
                    e.estimated_input,
                ),
            )

        return op

    async def add(self, entry: UsageEntry) -> None:
        await self.db.write(self.add_op(entry))

    async def spent(self, since: str, *, automation_id: int | None = None) -> float:
        """The known cost of requests at or after ``since`` (one automation's, if given)."""
        sql = "SELECT COALESCE(SUM(cost), 0) FROM usage_ledger WHERE ts >= ?"
        args: tuple[object, ...] = (since,)
        if automation_id is not None:
            sql += " AND automation_id = ?"
            args = (since, automation_id)

        def op(conn: sqlite3.Connection) -> float:
            return float(conn.execute(sql, args).fetchone()[0])

        return await self.db.read(op)

    async def automation_budget(self, automation_id: int) -> float | None:
        def op(conn: sqlite3.Connection) -> float | None:
            row = conn.execute(
                "SELECT budget FROM automations WHERE id = ?", (automation_id,)
            ).fetchone()
            return None if row is None or row[0] is None else float(row[0])

        return await self.db.read(op)

    async def run_cost(self, run_id: str) -> float | None:
        def op(conn: sqlite3.Connection) -> float | None:
            row = conn.execute(
                "SELECT SUM(cost) FROM usage_ledger WHERE run_id = ?", (run_id,)
            ).fetchone()
            return None if row[0] is None else float(row[0])

        return await self.db.read(op)

    async def sums(self, start: str, end: str, group_by: str) -> list[UsageSum]:
        """Totals of requests in [start, end) per group (``GROUPINGS`` names them)."""
        return await self.db.read(lambda conn: sums_sync(conn, start, end, group_by))

    async def last_request(self, session_id: str, sources: tuple[str, ...]) -> LastRequest | None:
        """The session's latest request from one of ``sources`` (its main agent's)."""
        marks = ", ".join("?" for _ in sources)

        def op(conn: sqlite3.Connection) -> LastRequest | None:
            row = conn.execute(
                "SELECT ts, input_tokens, estimated_input FROM usage_ledger"
                f" WHERE session_id = ? AND source IN ({marks}) ORDER BY id DESC LIMIT 1",
                (session_id, *sources),
            ).fetchone()
            return LastRequest(row[0], row[1], row[2]) if row else None

        return await self.db.read(op)


def sums_from_file(path: Path, start: str, end: str, group_by: str) -> list[UsageSum]:
    """``sums`` read from a database file opened read-only (``famulus usage``):
    it works beside a running server (WAL readers never block its writer).
    A database without a ledger yet has no usage."""
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sums_sync(conn, start, end, group_by)
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        conn.close()


def sums_sync(conn: sqlite3.Connection, start: str, end: str, group_by: str) -> list[UsageSum]:
    """``sums`` on a connection of its own (``famulus usage`` reads without a server)."""
    key = GROUPINGS[group_by]
    label = _LABELS.get(group_by, "NULL")
    rows = conn.execute(
        f"SELECT {key} AS k, {label} AS label, SUM(u.input_tokens), SUM(u.output_tokens),"
        " SUM(u.cache_read_tokens), SUM(u.cost), COUNT(*) FROM usage_ledger u"
        " WHERE u.ts >= ? AND u.ts < ? GROUP BY k ORDER BY k",
        (start, end),
    ).fetchall()
    return [
        UsageSum(
            r[0], r[1], int(r[2]), int(r[3]), int(r[4]), None if r[5] is None else float(r[5]), r[6]
        )
        for r in rows
    ]
