"""Append-only, named migrations recorded in the ``_migrations`` table.

Each migration is a ``.sql`` file in ``store/migrations/``; files apply in name
order, once each. A landed migration is never edited: change the schema with a
new file. Areas use their own number ranges so parallel work never collides:
0000-0099 core, 0100-0199 llm/chat, 0200-0299 memory, 0300+ later areas.
"""

from __future__ import annotations

import sqlite3
from importlib import resources

from famulus.timeutil import now_iso


def _migration_files() -> list[tuple[str, str]]:
    folder = resources.files("famulus.store") / "migrations"
    files = sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    )
    return [(name.removesuffix(".sql"), sql) for name, sql in files]


def known_migrations() -> list[str]:
    """The names of every migration this version ships, in order."""
    return [name for name, _ in _migration_files()]


def apply_migrations(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded; return the names applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied: list[str] = []
    for name, sql in _migration_files():
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, now_iso())
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        applied.append(name)
    return applied


def _statements(sql: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
