"""SQL for automations and their runs."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from famulus.store.db import Database
from famulus.store.deliveries import DeliveryRow, deliveries_of_runs, insert_deliveries
from famulus.timeutil import now_iso

_JSON = {"trigger", "notifiers"}
_COLUMNS = {
    "kind",
    "name",
    "description",
    "trigger",
    "notifiers",
    "enabled",
    "enabled_at",
    "writable",
    "budget",
    "session_id",
    "last_run_at",
    "next_run_at",
    "last_result",
    "last_status",
}


@dataclass(frozen=True)
class AutomationRow:
    id: int
    name: str
    description: str
    trigger: dict[str, Any]
    notifiers: list[str]
    enabled: bool
    writable: bool
    session_id: str | None
    created_at: str
    updated_at: str
    last_run_at: str | None
    next_run_at: str | None
    last_result: str | None
    last_status: str | None
    # When it last became active: created enabled, enabled again, or its
    # trigger changed while enabled; None while disabled.
    enabled_at: str | None = None
    kind: str = "task"  # task: the agent does the description; reminder: it is sent as is
    budget: float | None = None  # USD a day its runs may spend (None: no own cap)


@dataclass(frozen=True)
class AutomationRunRow:
    id: int
    started_at: str
    finished_at: str | None
    status: str
    result: str | None
    # What started it: schedule | catch_up | calendar | manual (None: older runs).
    fired_by: str | None = None
    session_id: str | None = None
    usage: dict[str, Any] | None = None  # the agent run's run_finished usage


_RUN_COLUMNS = "id, started_at, finished_at, status, result, fired_by, session_id, usage"


def _run(r: sqlite3.Row) -> AutomationRunRow:
    return AutomationRunRow(
        id=r["id"],
        started_at=r["started_at"],
        finished_at=r["finished_at"],
        status=r["status"],
        result=r["result"],
        fired_by=r["fired_by"],
        session_id=r["session_id"],
        usage=json.loads(r["usage"]) if r["usage"] else None,
    )


def _row(r: sqlite3.Row) -> AutomationRow:
    return AutomationRow(
        id=r["id"],
        name=r["name"],
        description=r["description"],
        trigger=json.loads(r["trigger"]),
        notifiers=json.loads(r["notifiers"]),
        enabled=bool(r["enabled"]),
        writable=bool(r["writable"]),
        session_id=r["session_id"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        last_run_at=r["last_run_at"],
        next_run_at=r["next_run_at"],
        last_result=r["last_result"],
        last_status=r["last_status"],
        enabled_at=r["enabled_at"],
        kind=r["kind"],
        budget=r["budget"],
    )


def _value(key: str, value: Any) -> Any:
    if key in _JSON:
        return json.dumps(value)
    if isinstance(value, bool):
        return int(value)
    return value


class AutomationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, fields: dict[str, Any]) -> AutomationRow:
        now = now_iso()
        cols = list(fields)
        if set(cols) - _COLUMNS:
            raise ValueError(f"unknown columns {set(cols) - _COLUMNS}")

        def op(conn: sqlite3.Connection) -> AutomationRow:
            cur = conn.execute(
                f"INSERT INTO automations ({', '.join(cols)}, created_at, updated_at)"
                f" VALUES ({', '.join('?' * len(cols))}, ?, ?)",
                (*[_value(k, fields[k]) for k in cols], now, now),
            )
            return _row(
                conn.execute("SELECT * FROM automations WHERE id = ?", (cur.lastrowid,)).fetchone()
            )

        return await self.db.write(op)

    async def update(
        self, automation_id: int, fields: dict[str, Any], touch: bool = True
    ) -> AutomationRow | None:
        if set(fields) - _COLUMNS:
            raise ValueError(f"unknown columns {set(fields) - _COLUMNS}")
        sets = [f"{k} = ?" for k in fields] + (["updated_at = ?"] if touch else [])
        params = [_value(k, v) for k, v in fields.items()] + ([now_iso()] if touch else [])

        def op(conn: sqlite3.Connection) -> AutomationRow | None:
            if sets:
                conn.execute(
                    f"UPDATE automations SET {', '.join(sets)} WHERE id = ?",
                    (*params, automation_id),
                )
            r = conn.execute("SELECT * FROM automations WHERE id = ?", (automation_id,)).fetchone()
            return _row(r) if r else None

        return await self.db.write(op)

    async def get(self, automation_id: int) -> AutomationRow | None:
        def op(conn: sqlite3.Connection) -> AutomationRow | None:
            r = conn.execute("SELECT * FROM automations WHERE id = ?", (automation_id,)).fetchone()
            return _row(r) if r else None

        return await self.db.read(op)

    async def all(self) -> list[AutomationRow]:
        return await self.db.read(
            lambda conn: [_row(r) for r in conn.execute("SELECT * FROM automations ORDER BY id")]
        )

    async def delete(self, automation_id: int) -> bool:
        return await self.db.write(
            lambda conn: (
                conn.execute("DELETE FROM automations WHERE id = ?", (automation_id,)).rowcount > 0
            )
        )

    async def start_run(self, automation_id: int, started_at: str, fired_by: str) -> int:
        def op(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO automation_runs (automation_id, started_at, status, fired_by)"
                " VALUES (?, ?, 'running', ?)",
                (automation_id, started_at, fired_by),
            )
            return int(cur.lastrowid or 0)

        return await self.db.write(op)

    async def run_in_session(self, run_row_id: int, session_id: str) -> None:
        """Record the session a run works in, as soon as it is known."""
        await self.db.write(
            lambda conn: conn.execute(
                "UPDATE automation_runs SET session_id = ? WHERE id = ?", (session_id, run_row_id)
            )
        )

    async def finish_run(
        self,
        run_row_id: int,
        status: str,
        result: str,
        run_id: str | None,
        deliver: tuple[int, list[str], str] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> list[int]:
        """Record the run's end (and its usage, when the agent reported one);
        with ``deliver`` (automation id, notifier names, title) also queue its
        result for each notifier in the same transaction. The ids of the
        queued deliveries."""
        now = now_iso()
        usage_json = json.dumps(usage) if usage else None

        def op(conn: sqlite3.Connection) -> list[int]:
            conn.execute(
                "UPDATE automation_runs SET finished_at = ?, status = ?, result = ?, run_id = ?,"
                " usage = ? WHERE id = ?",
                (now, status, result, run_id, usage_json, run_row_id),
            )
            if deliver is None:
                return []
            automation_id, names, title = deliver
            return insert_deliveries(
                conn, automation_id, run_row_id, names, title, result or "(no output)"
            )

        return await self.db.write(op)

    async def run(self, run_row_id: int) -> AutomationRunRow | None:
        def op(conn: sqlite3.Connection) -> AutomationRunRow | None:
            r = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM automation_runs WHERE id = ?", (run_row_id,)
            ).fetchone()
            return _run(r) if r else None

        return await self.db.read(op)

    async def interrupt_running(self) -> None:
        """Runs left 'running' by a crash are marked interrupted at start-up."""
        now = now_iso()
        await self.db.write(
            lambda conn: conn.execute(
                "UPDATE automation_runs SET status = 'interrupted', finished_at = ?"
                " WHERE status = 'running'",
                (now,),
            )
        )

    async def runs_with_deliveries(
        self, automation_id: int, limit: int = 20, offset: int = 0
    ) -> list[tuple[AutomationRunRow, list[DeliveryRow]]]:
        """A page of runs, newest first, each with its deliveries, read in one
        snapshot: a delivery that failed for good marks its run in the same
        write, so a reader never sees one without the other."""

        def op(conn: sqlite3.Connection) -> list[tuple[AutomationRunRow, list[DeliveryRow]]]:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM automation_runs"
                " WHERE automation_id = ? ORDER BY id DESC LIMIT ? OFFSET ?",
                (automation_id, limit, offset),
            ).fetchall()
            runs = [_run(r) for r in rows]
            found = deliveries_of_runs(conn, [r.id for r in runs])
            return [(r, found.get(r.id, [])) for r in runs]

        return await self.db.read(op)

    async def runs(
        self, automation_id: int, limit: int = 20, offset: int = 0
    ) -> list[AutomationRunRow]:
        """Newest first."""

        def op(conn: sqlite3.Connection) -> list[AutomationRunRow]:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM automation_runs"
                " WHERE automation_id = ? ORDER BY id DESC LIMIT ? OFFSET ?",
                (automation_id, limit, offset),
            ).fetchall()
            return [_run(r) for r in rows]

        return await self.db.read(op)

    async def count_runs(self, automation_id: int) -> int:
        return await self.db.read(
            lambda conn: int(
                conn.execute(
                    "SELECT count(*) FROM automation_runs WHERE automation_id = ?",
                    (automation_id,),
                ).fetchone()[0]
            )
        )

    async def using_notifier(self, name: str) -> list[str]:
        def op(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "SELECT name FROM automations WHERE EXISTS"
                " (SELECT 1 FROM json_each(automations.notifiers) WHERE value = ?)",
                (name,),
            ).fetchall()
            return [r[0] for r in rows]

        return await self.db.read(op)
