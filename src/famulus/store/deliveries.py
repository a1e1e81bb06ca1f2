"""SQL for notifier deliveries: one row per (automation run, notifier), kept
until it is final, with every try it took."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from famulus.store.db import Database
from famulus.timeutil import now_iso

PENDING, RETRYING, DELIVERED, FAILED = "pending", "retrying", "delivered", "failed"


@dataclass(frozen=True)
class DeliveryRow:
    id: int
    automation_id: int
    run_id: int
    notifier: str
    title: str
    text: str
    status: str
    attempts: int
    next_attempt_at: str | None
    last_error: str | None
    created_at: str
    finished_at: str | None
    tries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def final(self) -> bool:
        return self.status in (DELIVERED, FAILED)


def _row(r: sqlite3.Row) -> DeliveryRow:
    return DeliveryRow(
        id=r["id"],
        automation_id=r["automation_id"],
        run_id=r["run_id"],
        notifier=r["notifier"],
        title=r["title"],
        text=r["text"],
        status=r["status"],
        attempts=r["attempts"],
        next_attempt_at=r["next_attempt_at"],
        last_error=r["last_error"],
        created_at=r["created_at"],
        finished_at=r["finished_at"],
        tries=json.loads(r["tries"]),
    )


def insert_deliveries(
    conn: sqlite3.Connection,
    automation_id: int,
    run_id: int,
    notifiers: list[str],
    title: str,
    text: str,
) -> list[int]:
    """Queue one due delivery per notifier inside the caller's transaction, so
    a run's result and its pending deliveries are written together."""
    now = now_iso()
    ids = []
    for name in notifiers:
        cur = conn.execute(
            "INSERT INTO notifier_deliveries (automation_id, run_id, notifier, title, text,"
            " status, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (automation_id, run_id, name, title, text, PENDING, now, now),
        )
        ids.append(int(cur.lastrowid or 0))
    return ids


def deliveries_of_runs(
    conn: sqlite3.Connection, run_ids: list[int]
) -> dict[int, list[DeliveryRow]]:
    """The deliveries of each run, in the order they were queued, inside the
    caller's read (so runs and their deliveries come from one snapshot)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" * len(run_ids))
    rows = conn.execute(
        f"SELECT * FROM notifier_deliveries WHERE run_id IN ({marks}) ORDER BY id", run_ids
    ).fetchall()
    found: dict[int, list[DeliveryRow]] = {}
    for r in rows:
        found.setdefault(r["run_id"], []).append(_row(r))
    return found


def _mark_run(conn: sqlite3.Connection, delivery_id: int, error: str) -> None:
    """A delivery failed for good: its run counts as an error (unless it is
    one already) and says why under its output, which stays; the automation's
    last result follows when this is its latest run. Same transaction as the
    delivery's own record, so the two never disagree."""
    d = conn.execute(
        "SELECT automation_id, run_id, notifier FROM notifier_deliveries WHERE id = ?",
        (delivery_id,),
    ).fetchone()
    automation_id, run_id = d["automation_id"], d["run_id"]
    conn.execute(
        "UPDATE automation_runs SET result = COALESCE(result, '') || ?,"
        " status = CASE WHEN status = 'ok' THEN 'error' ELSE status END WHERE id = ?",
        (f"\n\nDelivery problem: {d['notifier']}: {error}", run_id),
    )
    conn.execute(
        "UPDATE automations SET (last_status, last_result) ="
        " (SELECT status, result FROM automation_runs WHERE id = ?)"
        " WHERE id = ?"
        " AND ? = (SELECT max(id) FROM automation_runs WHERE automation_id = ?)",
        (run_id, automation_id, run_id, automation_id),
    )


class DeliveryStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, delivery_id: int) -> DeliveryRow | None:
        def op(conn: sqlite3.Connection) -> DeliveryRow | None:
            r = conn.execute(
                "SELECT * FROM notifier_deliveries WHERE id = ?", (delivery_id,)
            ).fetchone()
            return _row(r) if r else None

        return await self.db.read(op)

    async def waiting(self) -> list[tuple[int, str]]:
        """(id, next_attempt_at) of every delivery that is not final yet."""

        def op(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            rows = conn.execute(
                "SELECT id, next_attempt_at FROM notifier_deliveries"
                " WHERE next_attempt_at IS NOT NULL ORDER BY next_attempt_at"
            ).fetchall()
            return [(int(r[0]), str(r[1])) for r in rows]

        return await self.db.read(op)

    async def record(
        self, delivery_id: int, error: str | None, next_attempt_at: str | None
    ) -> DeliveryRow | None:
        """Record one try: ``error`` None means delivered; otherwise it is
        retried at ``next_attempt_at``, or failed for good when that is None."""
        now = now_iso()

        def op(conn: sqlite3.Connection) -> DeliveryRow | None:
            r = conn.execute(
                "SELECT attempts, tries FROM notifier_deliveries WHERE id = ?", (delivery_id,)
            ).fetchone()
            if r is None:
                return None  # its automation was deleted meanwhile
            attempt = int(r["attempts"]) + 1
            tries = json.loads(r["tries"])
            tries.append(
                {"attempt": attempt, "at": now, "status": "ok" if error is None else "error"}
                | ({} if error is None else {"error": error})
            )
            if error is None:
                status, nxt = DELIVERED, None
            else:
                status, nxt = (RETRYING, next_attempt_at) if next_attempt_at else (FAILED, None)
            if status == FAILED:
                _mark_run(conn, delivery_id, error or "failed")
            conn.execute(
                "UPDATE notifier_deliveries SET status = ?, attempts = ?, next_attempt_at = ?,"
                " last_error = COALESCE(?, last_error), tries = ?, finished_at = ? WHERE id = ?",
                (
                    status,
                    attempt,
                    nxt,
                    error,
                    json.dumps(tries),
                    None if nxt else now,
                    delivery_id,
                ),
            )
            got = conn.execute(
                "SELECT * FROM notifier_deliveries WHERE id = ?", (delivery_id,)
            ).fetchone()
            return _row(got)

        return await self.db.write(op)
