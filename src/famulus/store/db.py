"""The database handle: one writer thread, a pool of readers, WAL mode.

Why one writer: SQLite allows one writer at a time; funnelling every write
through one thread turns lock contention into a queue and makes the per-session
event sequence numbers trivially race-free.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from famulus.store.migrate import apply_migrations

T = TypeVar("T")
# A write that another write's transaction can carry (a state change recorded
# together with the event announcing it).
WriteOp = Callable[[sqlite3.Connection], object]

_READERS = 4


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 5000")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class Database:
    """Async facade over SQLite: ``await db.write(fn)`` and ``await db.read(fn)``.

    ``fn`` receives a connection. A write runs inside one transaction that is
    committed when ``fn`` returns and rolled back when it raises.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-writer")
        self._reader_pool = ThreadPoolExecutor(max_workers=_READERS, thread_name_prefix="db-reader")
        self._local = threading.local()
        self._writer: sqlite3.Connection | None = None
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    def open(self) -> None:
        """Create the file, apply pending migrations; called once at start-up."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(self.path, readonly=False)
        apply_migrations(conn)
        self._writer = conn
        for suffix in ("", "-wal", "-shm"):
            try:
                self.path.with_name(self.path.name + suffix).chmod(0o600)
            except OSError:
                pass

    def close(self) -> None:
        self._writer_pool.shutdown(wait=True)
        self._reader_pool.shutdown(wait=True)
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # -- writes -------------------------------------------------------------

    def _run_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._writer
        if conn is None:
            raise RuntimeError("database is not open")
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer_pool, self._run_write, fn)

    def write_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """For start-up code and CLI commands that run outside the event loop."""
        return self._writer_pool.submit(self._run_write, fn).result()

    # -- reads --------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path, readonly=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _run_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            return fn(conn)
        finally:
            conn.execute("COMMIT")

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader_pool, self._run_read, fn)

    def read_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return self._reader_pool.submit(self._run_read, fn).result()
