"""The database seen from outside a running server: online copy, integrity, migrations.

``famulus backup``, ``restore`` and ``doctor`` run while a server may hold the
home, so none of this goes through ``Database`` (whose writer would apply
migrations and chmod files). The source is opened read-only: SQLite's online
backup API copies a consistent snapshot page by page even while the server's
writer commits, which a plain file copy of a WAL database does not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from famulus.store.migrate import known_migrations

T = TypeVar("T")
_PAGES_PER_STEP = 256  # small steps let the server's writer in between them


class NotADatabase(Exception):
    """The file is missing, unreadable or not an SQLite database."""


def _open_readonly(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise NotADatabase(f"{path} does not exist")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row  # as the server's connections, for repository functions
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise NotADatabase(f"{path}: {exc}") from None
    return conn


def online_backup(source: Path, target: Path) -> None:
    """A consistent copy of ``source`` at ``target`` (a new file, mode 0600), taken
    while other processes may be writing; the copy is a single file (no WAL)."""
    src = _open_readonly(source)
    try:
        target.touch(mode=0o600, exist_ok=False)
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            src.backup(dst, pages=_PAGES_PER_STEP)
            dst.execute("PRAGMA journal_mode = DELETE")
        finally:
            dst.close()
    except sqlite3.DatabaseError as exc:
        raise NotADatabase(f"{source}: {exc}") from None
    finally:
        src.close()


def integrity_problems(path: Path) -> list[str]:
    """What ``PRAGMA integrity_check`` finds (empty when the file is sound)."""
    conn = _open_readonly(path)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    finally:
        conn.close()
    found = [str(row[0]) for row in rows]
    return [] if found == ["ok"] else found


def read_only(path: Path, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn`` on a read-only connection to ``path`` (a repository function such
    as ``store.llm.custom_models``), for commands that run beside a server."""
    conn = _open_readonly(path)
    try:
        return fn(conn)
    except sqlite3.DatabaseError as exc:
        raise NotADatabase(f"{path}: {exc}") from None
    finally:
        conn.close()


@dataclass(frozen=True)
class MigrationState:
    """Which of this famulus's migrations a database has, and which it has that
    this famulus does not know (a database from a newer version)."""

    applied: tuple[str, ...]
    pending: tuple[str, ...]
    unknown: tuple[str, ...]

    @property
    def latest(self) -> str | None:
        return self.applied[-1] if self.applied else None


def migration_state(path: Path) -> MigrationState:
    conn = _open_readonly(path)
    try:
        has_table = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
        ).fetchone()
        rows = conn.execute("SELECT name FROM _migrations").fetchall() if has_table else []
    except sqlite3.DatabaseError as exc:
        raise NotADatabase(f"{path}: {exc}") from None
    finally:
        conn.close()
    done = {str(row[0]) for row in rows}
    known = known_migrations()
    return MigrationState(
        applied=tuple(sorted(done)),
        pending=tuple(name for name in known if name not in done),
        unknown=tuple(sorted(done - set(known))),
    )
