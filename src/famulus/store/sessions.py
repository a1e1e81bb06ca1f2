"""SQL for sessions and their message history.

History rows are written one completed message at a time, so a crash loses at
most the message being generated. ``message_count`` counts user and assistant
messages (what a person would call the conversation's length). ``origin`` is
``chat`` for a person's conversations and ``automation`` for an automation's
own session; ``origin=None`` in a query means every origin.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from famulus.store.db import Database
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    name: str
    sources: list[str]
    started_at: str
    last_activity: str
    message_count: int
    archived_at: str | None
    origin: str = "chat"


@dataclass(frozen=True)
class MessageRow:
    id: int
    session_id: str
    run_id: str | None
    role: str
    content: str
    created_at: str
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    images: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def through_id(self) -> int:
        """For a compaction ``summary``: the id of the last raw row it folds (else 0)."""
        try:
            return int(self.meta.get("through_id", 0))
        except (TypeError, ValueError):
            return 0


_SESSION_SELECT = """
SELECT s.id, s.name, s.sources, s.created_at, s.last_activity, s.archived_at, s.origin,
       (SELECT COUNT(*) FROM messages m
         WHERE m.session_id = s.id AND m.role IN ('user', 'assistant')) AS message_count
  FROM sessions s
"""


def _session(row: sqlite3.Row) -> SessionRow:
    return SessionRow(
        session_id=row["id"],
        name=row["name"],
        sources=json.loads(row["sources"]),
        started_at=row["created_at"],
        last_activity=row["last_activity"],
        message_count=row["message_count"],
        archived_at=row["archived_at"],
        origin=row["origin"],
    )


def _loads(value: str | None) -> Any:
    return json.loads(value) if value is not None else None


def _message(row: sqlite3.Row) -> MessageRow:
    return MessageRow(
        id=row["id"],
        session_id=row["session_id"],
        run_id=row["run_id"],
        role=row["role"],
        content=row["content"],
        created_at=row["created_at"],
        tool_calls=_loads(row["tool_calls"]),
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        images=_loads(row["images"]),
        meta=_loads(row["meta"]) or {},
    )


def insert_message(
    conn: sqlite3.Connection,
    session_id: str,
    role: str,
    content: str,
    *,
    run_id: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    images: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> MessageRow:
    """One history row, inside the caller's transaction (also used by the store of
    queued messages, which moves a message into history atomically)."""
    now = now_iso()
    cur = conn.execute(
        "INSERT INTO messages (session_id, run_id, role, content, tool_calls,"
        " tool_call_id, tool_name, images, meta, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            run_id,
            role,
            content,
            json.dumps(tool_calls) if tool_calls else None,
            tool_call_id,
            tool_name,
            json.dumps(images) if images else None,
            json.dumps(meta) if meta else None,
            now,
        ),
    )
    conn.execute("UPDATE sessions SET last_activity = ? WHERE id = ?", (now, session_id))
    row = conn.execute("SELECT * FROM messages WHERE id = ?", (cur.lastrowid,)).fetchone()
    return _message(row)


class SessionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- sessions -----------------------------------------------------------

    async def create(self, session_id: str, name: str, origin: str = "chat") -> SessionRow:
        now = now_iso()

        def op(conn: sqlite3.Connection) -> SessionRow:
            conn.execute(
                "INSERT INTO sessions (id, name, origin, created_at, last_activity)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, name, origin, now, now),
            )
            return _fetch(conn, session_id)  # type: ignore[return-value]

        return await self.db.write(op)

    async def get(self, session_id: str) -> SessionRow | None:
        return await self.db.read(lambda conn: _fetch(conn, session_id))

    async def most_recent_active(self, origin: str = "chat") -> SessionRow | None:
        def op(conn: sqlite3.Connection) -> SessionRow | None:
            row = conn.execute(
                _SESSION_SELECT + " WHERE s.archived_at IS NULL AND s.origin = ?"
                " ORDER BY s.last_activity DESC, s.rowid DESC LIMIT 1",
                (origin,),
            ).fetchone()
            return _session(row) if row else None

        return await self.db.read(op)

    async def page(
        self, *, archived: bool, limit: int, offset: int = 0, origin: str | None = None
    ) -> list[SessionRow]:
        where = "s.archived_at IS NOT NULL" if archived else "s.archived_at IS NULL"
        order = "s.archived_at DESC" if archived else "s.last_activity DESC"
        params: list[Any] = []
        if origin is not None:
            where += " AND s.origin = ?"
            params.append(origin)

        def op(conn: sqlite3.Connection) -> list[SessionRow]:
            rows = conn.execute(
                f"{_SESSION_SELECT} WHERE {where} ORDER BY {order}, s.rowid DESC LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ).fetchall()
            return [_session(r) for r in rows]

        return await self.db.read(op)

    async def count(self, *, archived: bool) -> int:
        where = "archived_at IS NOT NULL" if archived else "archived_at IS NULL"
        return await self.db.read(
            lambda conn: conn.execute(f"SELECT COUNT(*) FROM sessions WHERE {where}").fetchone()[0]
        )

    async def add_source(self, session_id: str, source: str) -> None:
        """Append ``source`` to the session's sources unless present, in one write."""

        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT sources FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return
            sources = json.loads(row["sources"])
            if source not in sources:
                sources.append(source)
                conn.execute(
                    "UPDATE sessions SET sources = ? WHERE id = ?",
                    (json.dumps(sources), session_id),
                )

        await self.db.write(op)

    async def update(self, session_id: str, **fields: Any) -> SessionRow | None:
        """Set columns (name, archived_at, sources, last_activity) on one session."""
        allowed = {"name", "archived_at", "sources", "last_activity"}
        if not fields or set(fields) - allowed:
            raise ValueError(f"cannot update {set(fields) - allowed}")
        values = [json.dumps(v) if k == "sources" else v for k, v in fields.items()]
        assignments = ", ".join(f"{k} = ?" for k in fields)

        def op(conn: sqlite3.Connection) -> SessionRow | None:
            conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values, session_id))
            return _fetch(conn, session_id)

        return await self.db.write(op)

    async def delete(self, session_id: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

        return await self.db.write(op)

    # -- messages -----------------------------------------------------------

    def message_op(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        run_id: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        images: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[sqlite3.Connection], MessageRow]:
        def op(conn: sqlite3.Connection) -> MessageRow:
            return insert_message(
                conn,
                session_id,
                role,
                content,
                run_id=run_id,
                tool_calls=tool_calls,
                tool_call_id=tool_call_id,
                tool_name=tool_name,
                images=images,
                meta=meta,
            )

        return op

    async def add_message(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        run_id: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        images: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> MessageRow:
        op = self.message_op(
            session_id,
            role,
            content,
            run_id=run_id,
            tool_calls=tool_calls,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            images=images,
            meta=meta,
        )
        return await self.db.write(op)

    async def messages(
        self, session_id: str, *, roles: tuple[str, ...] | None = None, after_id: int = 0
    ) -> list[MessageRow]:
        def op(conn: sqlite3.Connection) -> list[MessageRow]:
            sql = "SELECT * FROM messages WHERE session_id = ? AND id > ?"
            params: list[Any] = [session_id, after_id]
            if roles:
                sql += f" AND role IN ({','.join('?' * len(roles))})"
                params.extend(roles)
            rows = conn.execute(sql + " ORDER BY id", params).fetchall()
            return [_message(r) for r in rows]

        return await self.db.read(op)

    async def clear_messages(self, session_id: str) -> int:
        now = now_iso()

        def op(conn: sqlite3.Connection) -> int:
            n = conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,)).rowcount
            conn.execute("UPDATE sessions SET last_activity = ? WHERE id = ?", (now, session_id))
            return n

        return await self.db.write(op)


def _fetch(conn: sqlite3.Connection, session_id: str) -> SessionRow | None:
    row = conn.execute(_SESSION_SELECT + " WHERE s.id = ?", (session_id,)).fetchone()
    return _session(row) if row else None
