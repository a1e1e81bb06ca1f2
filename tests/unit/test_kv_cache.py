"""The settings cache in store/kv.py: reads after writes see the write, a
caller cannot change the cache through a value it got, and a read that raced
with a write does not put the older value back."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from famulus.store.db import Database
from famulus.store.kv import KVStore


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "famulus.db")
    database.open()
    yield database
    database.close()


async def test_reads_see_writes_and_deletes(db: Database) -> None:
    kv = KVStore(db)
    assert await kv.get("k", "default") == "default"
    await kv.set("k", {"a": [1]})
    assert await kv.get("k") == {"a": [1]}
    got = await kv.get("k")
    got["a"].append(2)  # the caller's copy, not the cache
    assert await kv.get("k") == {"a": [1]}
    assert await KVStore(db).get("k") == {"a": [1]}  # it is in the database too
    await kv.delete("k")
    assert await kv.get("k", "gone") == "gone"


async def test_a_read_that_raced_a_write_is_not_cached(db: Database) -> None:
    kv = KVStore(db)
    await kv.set("k", "old")
    kv._cache.clear()  # as after a start: the next get reads the database
    reading = asyncio.Event()
    release = asyncio.Event()
    original = db.read

    async def slow_read(fn: Any) -> Any:
        value = await original(fn)  # reads "old"
        reading.set()
        await release.wait()  # ... and returns it only after the write below
        return value

    db.read = slow_read  # type: ignore[method-assign]
    racing = asyncio.create_task(kv.get("k"))
    await reading.wait()
    await kv.set("k", "new")
    release.set()
    assert await racing == "old"  # that read began before the write
    db.read = original  # type: ignore[method-assign]
    assert await kv.get("k") == "new"


def _rows(path: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT key, value FROM kv").fetchall()
    finally:
        conn.close()


async def test_a_failed_write_leaves_no_cached_value(db: Database) -> None:
    kv = KVStore(db)
    await kv.set("k", 1)
    original = db.write

    async def failing(fn: Any) -> Any:
        raise RuntimeError("disk full")

    db.write = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await kv.set("k", 2)
    db.write = original  # type: ignore[method-assign]
    assert await kv.get("k") == 1
    assert _rows(db.path) == [("k", "1")]
