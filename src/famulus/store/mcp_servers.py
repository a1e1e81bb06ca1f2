"""SQL for the MCP servers the person registered (table ``mcp_servers``).

Only what may be shown lives here; the values of a server's env and headers
are secrets and live in the secrets file (``mcp/registry.py``).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from famulus.store.db import Database
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class McpServerRow:
    name: str
    transport: str  # "stdio" or "http"
    command: str | None
    args: list[str]
    url: str | None
    trusted: bool
    enabled: bool
    created_at: str


def _row(r: sqlite3.Row) -> McpServerRow:
    return McpServerRow(
        name=r["name"],
        transport=r["transport"],
        command=r["command"],
        args=list(json.loads(r["args"])),
        url=r["url"],
        trusted=bool(r["trusted"]),
        enabled=bool(r["enabled"]),
        created_at=r["created_at"],
    )


def _values(row: McpServerRow) -> tuple[object, ...]:
    return (
        row.transport,
        row.command,
        json.dumps(row.args),
        row.url,
        int(row.trusted),
        int(row.enabled),
    )


class McpServerStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, row: McpServerRow) -> McpServerRow | None:
        """Insert ``row`` (its ``created_at`` is set now); None when the name is taken."""
        now = now_iso()

        def op(conn: sqlite3.Connection) -> McpServerRow | None:
            cur = conn.execute(
                "INSERT OR IGNORE INTO mcp_servers"
                " (transport, command, args, url, trusted, enabled, name, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*_values(row), row.name, now),
            )
            if not cur.rowcount:
                return None
            found = conn.execute("SELECT * FROM mcp_servers WHERE name = ?", (row.name,))
            return _row(found.fetchone())

        return await self.db.write(op)

    async def get(self, name: str) -> McpServerRow | None:
        def op(conn: sqlite3.Connection) -> McpServerRow | None:
            r = conn.execute("SELECT * FROM mcp_servers WHERE name = ?", (name,)).fetchone()
            return _row(r) if r else None

        return await self.db.read(op)

    async def all(self) -> list[McpServerRow]:
        return await self.db.read(
            lambda conn: [_row(r) for r in conn.execute("SELECT * FROM mcp_servers ORDER BY name")]
        )

    async def update(self, row: McpServerRow) -> McpServerRow | None:
        """Write every field of ``row`` but its name and creation time; None when gone."""

        def op(conn: sqlite3.Connection) -> McpServerRow | None:
            conn.execute(
                "UPDATE mcp_servers SET transport = ?, command = ?, args = ?, url = ?,"
                " trusted = ?, enabled = ? WHERE name = ?",
                (*_values(row), row.name),
            )
            r = conn.execute("SELECT * FROM mcp_servers WHERE name = ?", (row.name,)).fetchone()
            return _row(r) if r else None

        return await self.db.write(op)

    async def delete(self, name: str) -> bool:
        return await self.db.write(
            lambda conn: (
                conn.execute("DELETE FROM mcp_servers WHERE name = ?", (name,)).rowcount > 0
            )
        )
