"""SQL for agent runs: status, usage and cost of every chat run.

A run row is written when the run starts and updated once when it ends, so a
row still 'running' at start-up belongs to a process that died mid-run.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from famulus.store.db import Database, WriteOp
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class RunUsageRow:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class RunRow:
    run_id: str
    session_id: str
    status: str
    model_id: str | None
    skip_approvals: bool
    backgrounded: bool
    usage: RunUsageRow
    error: str | None
    started_at: str
    finished_at: str | None


def _run(row: sqlite3.Row) -> RunRow:
    return RunRow(
        run_id=row["id"],
        session_id=row["session_id"],
        status=row["status"],
        model_id=row["model_id"],
        skip_approvals=bool(row["skip_approvals"]),
        backgrounded=bool(row["backgrounded"]),
        usage=RunUsageRow(
            row["prompt_tokens"], row["completion_tokens"], row["cache_read_tokens"], row["cost"]
        ),
        error=row["error"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )


class RunStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create_op(
        self, run_id: str, session_id: str, *, model_id: str, skip_approvals: bool
    ) -> WriteOp:
        now = now_iso()

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO runs (id, session_id, status, model_id, skip_approvals, started_at)"
                " VALUES (?, ?, 'running', ?, ?, ?)",
                (run_id, session_id, model_id, int(skip_approvals), now),
            )

        return op

    async def create(
        self, run_id: str, session_id: str, *, model_id: str, skip_approvals: bool
    ) -> None:
        await self.db.write(
            self.create_op(run_id, session_id, model_id=model_id, skip_approvals=skip_approvals)
        )

    async def mark_backgrounded(self, run_id: str) -> None:
        await self.db.write(
            lambda conn: conn.execute("UPDATE runs SET backgrounded = 1 WHERE id = ?", (run_id,))
        )

    def finish_op(
        self, run_id: str, status: str, usage: RunUsageRow, error: str | None = None
    ) -> WriteOp:
        now = now_iso()

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE runs SET status = ?, prompt_tokens = ?, completion_tokens = ?,"
                " cache_read_tokens = ?, cost = ?, error = ?, finished_at = ? WHERE id = ?",
                (
                    status,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cache_read_tokens,
                    usage.cost,
                    error,
                    now,
                    run_id,
                ),
            )

        return op

    async def finish(
        self, run_id: str, status: str, usage: RunUsageRow, error: str | None = None
    ) -> None:
        await self.db.write(self.finish_op(run_id, status, usage, error))

    async def get(self, run_id: str) -> RunRow | None:
        def op(conn: sqlite3.Connection) -> RunRow | None:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            return _run(row) if row else None

        return await self.db.read(op)

    async def last_finished(self, session_id: str) -> RunRow | None:
        def op(conn: sqlite3.Connection) -> RunRow | None:
            row = conn.execute(
                "SELECT * FROM runs WHERE session_id = ? AND status = 'finished'"
                " ORDER BY finished_at DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            return _run(row) if row else None

        return await self.db.read(op)

    async def interrupt_running(self, error: str) -> list[RunRow]:
        """Mark every run still 'running' as interrupted; return them (start-up)."""

        def op(conn: sqlite3.Connection) -> list[RunRow]:
            rows = [_run(r) for r in conn.execute("SELECT * FROM runs WHERE status = 'running'")]
            conn.execute(
                "UPDATE runs SET status = 'interrupted', error = ?, finished_at = ?"
                " WHERE status = 'running'",
                (error, now_iso()),
            )
            return rows

        return await self.db.write(op)
