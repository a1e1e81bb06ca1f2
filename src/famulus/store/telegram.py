"""SQL for the Telegram channel: approved chats, pairing codes, chat sessions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from famulus.store.db import Database
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class ChatRow:
    chat_id: int
    title: str
    session_id: str | None
    approved_at: str


@dataclass(frozen=True)
class PairingRow:
    code: str
    chat_id: int
    title: str
    created_at: str
    expires_at: str


def _chat(r: sqlite3.Row) -> ChatRow:
    return ChatRow(int(r["chat_id"]), r["title"], r["session_id"], r["approved_at"])


def _pairing(r: sqlite3.Row) -> PairingRow:
    return PairingRow(r["code"], int(r["chat_id"]), r["title"], r["created_at"], r["expires_at"])


class TelegramStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- approved chats --------------------------------------------------------

    async def chat(self, chat_id: int) -> ChatRow | None:
        def op(conn: sqlite3.Connection) -> ChatRow | None:
            r = conn.execute(
                "SELECT * FROM telegram_chats WHERE chat_id = ?", (chat_id,)
            ).fetchone()
            return _chat(r) if r else None

        return await self.db.read(op)

    async def chats(self) -> list[ChatRow]:
        return await self.db.read(
            lambda conn: [
                _chat(r) for r in conn.execute("SELECT * FROM telegram_chats ORDER BY approved_at")
            ]
        )

    async def remove_chat(self, chat_id: int) -> bool:
        return await self.db.write(
            lambda conn: (
                conn.execute("DELETE FROM telegram_chats WHERE chat_id = ?", (chat_id,)).rowcount
                > 0
            )
        )

    async def set_session(self, chat_id: int, session_id: str, new: bool) -> None:
        """Make ``session_id`` the chat's current session (``new``: one it just started)."""
        now = now_iso()

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE telegram_chats SET session_id = ? WHERE chat_id = ?", (session_id, chat_id)
            )
            if new:
                conn.execute(
                    "INSERT OR IGNORE INTO telegram_sessions (chat_id, session_id, created_at)"
                    " VALUES (?, ?, ?)",
                    (chat_id, session_id, now),
                )

        await self.db.write(op)

    async def session_ids(self, chat_id: int) -> list[str]:
        """Every session the chat started, newest first."""
        return await self.db.read(
            lambda conn: [
                str(r[0])
                for r in conn.execute(
                    "SELECT session_id FROM telegram_sessions WHERE chat_id = ?"
                    " ORDER BY created_at DESC, session_id",
                    (chat_id,),
                )
            ]
        )

    # -- pairing codes ---------------------------------------------------------

    async def pairing_for(self, chat_id: int, now: str) -> PairingRow | None:
        """The chat's pairing request still open at ``now``, if any."""

        def op(conn: sqlite3.Connection) -> PairingRow | None:
            r = conn.execute(
                "SELECT * FROM telegram_pairings WHERE chat_id = ? AND expires_at > ?",
                (chat_id, now),
            ).fetchone()
            return _pairing(r) if r else None

        return await self.db.read(op)

    async def pairings(self, now: str) -> list[PairingRow]:
        return await self.db.read(
            lambda conn: [
                _pairing(r)
                for r in conn.execute(
                    "SELECT * FROM telegram_pairings WHERE expires_at > ? ORDER BY created_at",
                    (now,),
                )
            ]
        )

    async def add_pairing(self, row: PairingRow, max_open: int) -> bool:
        """Store a new request (replacing the chat's expired one); False when
        ``max_open`` requests are already open, so strangers cannot fill the table."""

        def op(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM telegram_pairings WHERE expires_at <= ?", (row.created_at,))
            conn.execute("DELETE FROM telegram_pairings WHERE chat_id = ?", (row.chat_id,))
            (count,) = conn.execute("SELECT COUNT(*) FROM telegram_pairings").fetchone()
            if count >= max_open:
                return False
            conn.execute(
                "INSERT INTO telegram_pairings (code, chat_id, title, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (row.code, row.chat_id, row.title, row.created_at, row.expires_at),
            )
            return True

        return await self.db.write(op)

    async def approve(self, code: str, now: str) -> PairingRow | None:
        """Turn the open request with ``code`` into an approved chat (one write)."""

        def op(conn: sqlite3.Connection) -> PairingRow | None:
            r = conn.execute(
                "SELECT * FROM telegram_pairings WHERE code = ? AND expires_at > ?", (code, now)
            ).fetchone()
            if r is None:
                return None
            found = _pairing(r)
            conn.execute("DELETE FROM telegram_pairings WHERE code = ?", (code,))
            conn.execute(
                "INSERT INTO telegram_chats (chat_id, title, session_id, approved_at)"
                " VALUES (?, ?, NULL, ?) ON CONFLICT (chat_id) DO UPDATE SET title = excluded.title",
                (found.chat_id, found.title, now),
            )
            return found

        return await self.db.write(op)

    async def deny(self, code: str) -> bool:
        return await self.db.write(
            lambda conn: (
                conn.execute("DELETE FROM telegram_pairings WHERE code = ?", (code,)).rowcount > 0
            )
        )
