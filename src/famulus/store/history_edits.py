"""SQL that edits a session's history as a whole: revert its last turns, branch it.

Each edit is one transaction in the writer thread, so a run writing to the same
session sees the history either before or after it, never half-edited.

A *turn* is a user message and every row after it up to the next user message.
Compaction summaries (role ``summary``, ``meta.through_id`` = the last raw row
they fold) follow the rows they fold: a revert drops every summary that folds a
removed row and keeps the others; a branch copies the summaries that fold only
copied rows, with ``through_id`` pointing at the copies.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from famulus.store.db import Database
from famulus.store.sessions import MessageRow, SessionRow, _fetch, _message
from famulus.timeutil import now_iso

# The roles GET /session/history shows, and so the ids a client can name.
VISIBLE_ROLES = ("user", "assistant", "tool")

REVERTED = "reverted"
MISSING = "missing"  # no such session (or it was deleted meanwhile)
BUSY = "busy"  # a run of the session is writing to it
EMPTY = "empty"  # no user message to revert to


@dataclass(frozen=True)
class Revert:
    status: str
    removed: list[MessageRow] = field(default_factory=list)
    turns: int = 0


def _running(conn: sqlite3.Connection, session_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM runs WHERE session_id = ? AND status = 'running' LIMIT 1", (session_id,)
    ).fetchone()
    return row is not None


def _starting(conn: sqlite3.Connection, rows: list[MessageRow]) -> bool:
    """A user message names a run whose row is not written yet: that run is
    starting right now (its message is written just before its run row)."""
    run_ids = {r.run_id for r in rows if r.role == "user" and r.run_id}
    return any(
        conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None
        for run_id in run_ids
    )


def _revert(conn: sqlite3.Connection, session_id: str, turns: int) -> Revert:
    if _fetch(conn, session_id) is None:
        return Revert(MISSING)
    if _running(conn, session_id):
        return Revert(BUSY)
    starts = conn.execute(
        "SELECT id FROM messages WHERE session_id = ? AND role = 'user' ORDER BY id DESC LIMIT ?",
        (session_id, turns),
    ).fetchall()
    if not starts:
        return Revert(EMPTY)
    cut = min(r["id"] for r in starts)
    after = [
        _message(r)
        for r in conn.execute(
            "SELECT * FROM messages WHERE session_id = ? AND id >= ? ORDER BY id", (session_id, cut)
        )
    ]
    if _starting(conn, after):
        return Revert(BUSY)
    doomed = [r for r in after if r.role != "summary" or r.through_id >= cut]
    conn.executemany("DELETE FROM messages WHERE id = ?", [(r.id,) for r in doomed])
    conn.execute("UPDATE sessions SET last_activity = ? WHERE id = ?", (now_iso(), session_id))
    return Revert(REVERTED, [r for r in doomed if r.role in VISIBLE_ROLES], len(starts))


def _copy_row(conn: sqlite3.Connection, new_session_id: str, row: sqlite3.Row, meta: Any) -> int:
    cur = conn.execute(
        "INSERT INTO messages (session_id, run_id, role, content, tool_calls, tool_call_id,"
        " tool_name, images, meta, created_at) VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            new_session_id,
            row["role"],
            row["content"],
            row["tool_calls"],
            row["tool_call_id"],
            row["tool_name"],
            row["images"],
            json.dumps(meta) if meta else None,
            row["created_at"],
        ),
    )
    return int(cur.lastrowid or 0)


def _copy_history(
    conn: sqlite3.Connection, source_id: str, new_session_id: str, through: int
) -> None:
    """Copy the source's rows up to ``through`` (run ids left out: those runs
    belong to the source), then the summaries that fold only copied rows."""
    rows = conn.execute(
        "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (source_id,)
    ).fetchall()
    copied: dict[int, int] = {}  # source row id -> its copy's id
    summaries = []
    for row in rows:
        meta = json.loads(row["meta"]) if row["meta"] else None
        if row["role"] == "summary":
            summaries.append((row, meta or {}))
        elif row["id"] <= through:
            copied[row["id"]] = _copy_row(conn, new_session_id, row, meta)
    for row, meta in summaries:
        # Its last folded row must be among the copies (a void summary, whose row
        # a revert removed, stays behind): through_id then names that copy.
        target = copied.get(_message(row).through_id)
        if target is not None:
            _copy_row(conn, new_session_id, row, {**meta, "through_id": target})


def _branch(
    conn: sqlite3.Connection,
    source_id: str,
    message_id: int | None,
    new_session_id: str,
    name: str,
) -> SessionRow | None:
    source = _fetch(conn, source_id)
    if source is None:
        return None
    roles = ",".join("?" * len(VISIBLE_ROLES))
    if message_id is None:
        last = conn.execute(
            "SELECT MAX(id) FROM messages WHERE session_id = ?", (source_id,)
        ).fetchone()
        through = int(last[0] or 0)
    else:
        found = conn.execute(
            f"SELECT id FROM messages WHERE id = ? AND session_id = ? AND role IN ({roles})",
            (message_id, source_id, *VISIBLE_ROLES),
        ).fetchone()
        if found is None:
            return None
        through = message_id
    now = now_iso()
    conn.execute(
        "INSERT INTO sessions (id, name, origin, created_at, last_activity)"
        " VALUES (?, ?, 'chat', ?, ?)",
        (new_session_id, name, now, now),
    )
    _copy_history(conn, source_id, new_session_id, through)
    return _fetch(conn, new_session_id)


class HistoryEdits:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def revert(self, session_id: str, turns: int) -> Revert:
        """Remove the last ``turns`` turns (fewer when the session has fewer)."""
        return await self.db.write(lambda conn: _revert(conn, session_id, turns))

    async def branch(
        self, source_id: str, message_id: int | None, new_session_id: str, name: str
    ) -> SessionRow | None:
        """A new chat session holding the source's history up to ``message_id``
        (all of it when None); None when the source or the message is not there."""
        return await self.db.write(
            lambda conn: _branch(conn, source_id, message_id, new_session_id, name)
        )
