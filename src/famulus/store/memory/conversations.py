"""The conversation index: chunks of user and assistant messages, searchable.

Rows are written by the background indexer (``memory.conversations``), which
follows ``messages`` by id from a persisted high-water mark. The chunk table
references its message with ``ON DELETE CASCADE`` and its triggers drop the
full-text row and the vectors, so whatever deletes messages (a session delete,
a clear, a revert) removes them from the index in the same transaction.

A chunk's event days (the day its text names, "next Friday") are read after it
is written, by the same indexer, following the chunks by id from a second mark
(``dated_chunk_id``): reading dates is too slow for the write transaction, and
chunks written before the columns existed are read the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from famulus.store.db import Database
from famulus.store.memory.common import Conn, fts_query, text_hash
from famulus.timeutil import now_iso

INDEXED_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class ChunkFilter:
    """Which chunks a search may return (all None: every chunk)."""

    session_id: str | None = None
    exclude_session_id: str | None = None
    since: str | None = None  # ISO datetime, inclusive
    until: str | None = None  # ISO datetime, exclusive
    role: str | None = None

    def sql(self) -> tuple[str, list[Any]]:
        """A WHERE fragment over alias ``c`` (always valid, "1" when unfiltered)."""
        parts: list[str] = ["1"]
        params: list[Any] = []
        for clause, value in (
            ("c.session_id = ?", self.session_id),
            ("c.session_id != ?", self.exclude_session_id),
            ("c.created_at >= ?", self.since),
            ("c.created_at < ?", self.until),
            ("c.role = ?", self.role),
        ):
            if value is not None:
                parts.append(clause)
                params.append(value)
        return " AND ".join(parts), params


@dataclass(frozen=True)
class ChunkRow:
    id: int
    message_id: int
    session_id: str
    session_name: str
    role: str
    created_at: str
    text: str  # this chunk
    message_text: str  # the whole message
    event_start: str | None = None  # the days its text names (YYYY-MM-DD, both included)
    event_end: str | None = None


class ConversationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def mark(self) -> int:
        """The id of the last message the indexer has read (0 before the first run)."""
        return await self.db.read(_mark)

    async def index_new(self, batch: int, chunk: Callable[[str], list[str]]) -> int:
        """Chunk up to ``batch`` messages past the mark and move the mark, in one
        transaction; returns how many messages were read (0: caught up)."""

        def op(conn: Conn) -> int:
            mark = _mark(conn)
            rows = conn.execute(
                "SELECT id, session_id, role, content, created_at FROM messages"
                " WHERE id > ? ORDER BY id LIMIT ?",
                (mark, batch),
            ).fetchall()
            if not rows:
                return 0
            chunks = [
                (r["id"], r["session_id"], r["role"], n, piece, r["created_at"])
                for r in rows
                if r["role"] in INDEXED_ROLES
                for n, piece in enumerate(chunk(r["content"] or ""))
            ]
            conn.executemany(
                "INSERT OR IGNORE INTO conversation_chunks"
                " (message_id, session_id, role, chunk_no, text, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                chunks,
            )
            conn.execute(
                "INSERT INTO conversation_index_state (id, last_message_id, updated_at)"
                " VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE"
                " SET last_message_id = excluded.last_message_id, updated_at = excluded.updated_at",
                (int(rows[-1]["id"]), now_iso()),
            )
            return len(rows)

        return await self.db.write(op)

    async def unembedded(self, model: str, limit: int) -> list[tuple[int, str]]:
        """Chunks with no vector for ``model`` yet, oldest first."""
        return await self.db.read(
            lambda conn: [
                (int(r[0]), str(r[1]))
                for r in conn.execute(
                    "SELECT c.id, c.text FROM conversation_chunks c WHERE NOT EXISTS"
                    " (SELECT 1 FROM memory_vectors v WHERE v.owner_type = 'message'"
                    "  AND v.owner_id = c.id AND v.model = ?) ORDER BY c.id LIMIT ?",
                    (model, limit),
                )
            ]
        )

    async def put_vectors(self, model: str, items: list[tuple[int, str, np.ndarray]]) -> list[int]:
        """Store vectors of chunks that still exist (a message deleted while its
        chunk was being embedded leaves no vector behind); returns the ids kept."""

        def op(conn: Conn) -> list[int]:
            kept: list[int] = []
            for chunk_id, text, vec in items:
                cur = conn.execute(
                    "INSERT INTO memory_vectors (owner_type, owner_id, model, text_hash, dim, vec)"
                    " SELECT 'message', id, ?, ?, ?, ? FROM conversation_chunks WHERE id = ?"
                    " ON CONFLICT (owner_type, owner_id, model) DO UPDATE"
                    " SET text_hash = excluded.text_hash, dim = excluded.dim, vec = excluded.vec",
                    (
                        model,
                        text_hash(text),
                        int(vec.shape[0]),
                        vec.astype(np.float32).tobytes(),
                        chunk_id,
                    ),
                )
                if cur.rowcount > 0:
                    kept.append(chunk_id)
            return kept

        return await self.db.write(op)

    async def fts(self, query: str, where: ChunkFilter, k: int) -> list[int]:
        """Chunk ids matching ``query`` by BM25, best first, within the filter."""
        expr = fts_query(query)
        if not expr:
            return []
        clause, params = where.sql()
        return await self.db.read(
            lambda conn: [
                int(r[0])
                for r in conn.execute(
                    "SELECT c.id FROM conversation_fts f JOIN conversation_chunks c"
                    f" ON c.id = f.rowid WHERE conversation_fts MATCH ? AND {clause}"
                    " ORDER BY f.rank LIMIT ?",
                    (expr, *params, k),
                )
            ]
        )

    async def chunks(self, ids: list[int], where: ChunkFilter) -> dict[int, ChunkRow]:
        """The chunks among ``ids`` that exist and pass the filter (vector hits are
        filtered here, and ids of deleted messages simply drop out)."""
        if not ids:
            return {}
        clause, params = where.sql()

        def op(conn: Conn) -> dict[int, ChunkRow]:
            out: dict[int, ChunkRow] = {}
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                rows = conn.execute(
                    "SELECT c.id, c.message_id, c.session_id, COALESCE(s.name, '') AS name,"
                    " c.role, c.created_at, c.text, m.content, c.event_start, c.event_end"
                    " FROM conversation_chunks c"
                    " JOIN messages m ON m.id = c.message_id"
                    " LEFT JOIN sessions s ON s.id = c.session_id"
                    f" WHERE c.id IN ({','.join('?' * len(part))}) AND {clause}",
                    (*part, *params),
                ).fetchall()
                for r in rows:
                    out[int(r[0])] = ChunkRow(
                        int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]
                    )
            return out

        return await self.db.read(op)

    async def in_period(
        self, days: tuple[str, str], said: tuple[str, str], where: ChunkFilter, k: int
    ) -> list[int]:
        """Chunks within the filter that are about the ``days`` (ISO dates, both
        included): said within ``said`` (UTC timestamps, end excluded) or naming
        an event day that overlaps them. Latest first, at most ``k``."""
        clause, params = where.sql()
        return await self.db.read(
            lambda conn: [
                int(r[0])
                for r in conn.execute(
                    "SELECT c.id FROM conversation_chunks c WHERE ("
                    " (c.created_at >= ? AND c.created_at < ?)"
                    " OR (c.event_start IS NOT NULL AND c.event_start <= ? AND c.event_end >= ?))"
                    f" AND {clause} ORDER BY c.created_at DESC, c.id DESC LIMIT ?",
                    (said[0], said[1], days[1], days[0], *params, k),
                )
            ]
        )

    async def undated(self, limit: int) -> list[tuple[int, str, str]]:
        """Chunks past the dating mark, oldest first: (id, text, created_at)."""

        def op(conn: Conn) -> list[tuple[int, str, str]]:
            return [
                (int(r[0]), str(r[1]), str(r[2]))
                for r in conn.execute(
                    "SELECT id, text, created_at FROM conversation_chunks"
                    " WHERE id > ? ORDER BY id LIMIT ?",
                    (_dated_mark(conn), limit),
                )
            ]

        return await self.db.read(op)

    async def set_dates(self, dates: list[tuple[int, str, str]], last_id: int) -> None:
        """Store the event days found, ``(chunk id, start, end)``, and move the
        dating mark to ``last_id``, in one transaction (a chunk deleted
        meanwhile is simply not updated)."""

        def op(conn: Conn) -> None:
            conn.executemany(
                "UPDATE conversation_chunks SET event_start = ?, event_end = ? WHERE id = ?",
                [(start, end, chunk_id) for chunk_id, start, end in dates],
            )
            conn.execute(
                "INSERT INTO conversation_index_state (id, dated_chunk_id, updated_at)"
                " VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE"
                " SET dated_chunk_id = excluded.dated_chunk_id, updated_at = excluded.updated_at",
                (last_id, now_iso()),
            )

        await self.db.write(op)

    async def ids_within(self, where: ChunkFilter, cap: int) -> list[int] | None:
        """Every chunk id the filter lets through, or None when there are more
        than ``cap`` (then a vector search over everything is the cheaper way)."""
        clause, params = where.sql()
        rows = await self.db.read(
            lambda conn: conn.execute(
                f"SELECT c.id FROM conversation_chunks c WHERE {clause} LIMIT ?",
                (*params, cap + 1),
            ).fetchall()
        )
        return None if len(rows) > cap else [int(r[0]) for r in rows]

    async def existing(self, ids: list[int]) -> set[int]:
        """Which of the chunk ids still exist."""

        def op(conn: Conn) -> set[int]:
            out: set[int] = set()
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                out.update(
                    int(r[0])
                    for r in conn.execute(
                        "SELECT id FROM conversation_chunks"
                        f" WHERE id IN ({','.join('?' * len(part))})",
                        part,
                    )
                )
            return out

        return await self.db.read(op)

    async def session_names(self, session_ids: list[str]) -> dict[str, str]:
        """The names of those sessions that still exist (for provenance lines)."""
        if not session_ids:
            return {}
        marks = ",".join("?" * len(session_ids))
        return await self.db.read(
            lambda conn: {
                str(r[0]): str(r[1])
                for r in conn.execute(
                    f"SELECT id, name FROM sessions WHERE id IN ({marks})", session_ids
                )
            }
        )

    async def counts(self) -> tuple[int, int]:
        """(messages indexed, chunks) for status and tests."""
        return await self.db.read(
            lambda conn: tuple(
                conn.execute(
                    "SELECT COUNT(DISTINCT message_id), COUNT(*) FROM conversation_chunks"
                ).fetchone()
            )  # type: ignore[return-value]
        )

    async def pending_messages(self) -> int:
        """User and assistant messages past the mark (not yet indexed)."""

        def op(conn: Conn) -> int:
            roles = ",".join("?" * len(INDEXED_ROLES))
            return int(
                conn.execute(
                    f"SELECT COUNT(*) FROM messages WHERE id > ? AND role IN ({roles})",
                    (_mark(conn), *INDEXED_ROLES),
                ).fetchone()[0]
            )

        return await self.db.read(op)


def _mark(conn: Conn) -> int:
    row = conn.execute(
        "SELECT last_message_id FROM conversation_index_state WHERE id = 1"
    ).fetchone()
    return int(row[0]) if row else 0


def _dated_mark(conn: Conn) -> int:
    row = conn.execute(
        "SELECT dated_chunk_id FROM conversation_index_state WHERE id = 1"
    ).fetchone()
    return int(row[0]) if row else 0
