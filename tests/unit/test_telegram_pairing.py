"""Pairing codes: one open code per chat, a cap on open requests, expiry,
approval into an allowed chat, and at most one answer a minute per stranger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from famulus.channels.telegram import pairing
from famulus.channels.telegram.pairing import Pairing, normalize
from famulus.store.db import Database
from famulus.store.telegram import PairingRow, TelegramStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TelegramStore]:
    db = Database(tmp_path / "famulus.db")
    db.open()
    yield TelegramStore(db)
    db.close()


def test_codes_are_readable() -> None:
    code = pairing.new_code()
    assert len(code) == 8 and set(code) <= set(pairing.ALPHABET)
    assert not set("01OIL") & set(pairing.ALPHABET)
    assert normalize(" ab2c ") == "AB2C"


async def test_a_chat_keeps_its_code_and_strangers_cannot_fill_the_table(
    store: TelegramStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pairing, "MAX_OPEN", 3)
    p = Pairing(store)
    first = await p.request(1, "One")
    assert first.code is not None and (await p.request(1, "One")).code == first.code
    assert (await p.request(2, "Two")).code and (await p.request(3, "Three")).code
    assert (await p.request(4, "Four")).code is None  # full
    assert "too many" in pairing.stranger_text(await p.request(4, "Four"))
    assert await store.approve(first.code, "2000-01-01T00:00:00.000Z") is not None
    assert (await p.request(4, "Four")).code is not None  # room again
    chats = await store.chats()
    assert [(c.chat_id, c.title, c.session_id) for c in chats] == [(1, "One", None)]


async def test_an_expired_code_cannot_be_approved(store: TelegramStore) -> None:
    row = PairingRow("OLDCODE2", 7, "Old", "2000-01-01T00:00:00.000Z", "2000-01-01T01:00:00.000Z")
    assert await store.add_pairing(row, 20)
    assert await store.pairings("2000-01-01T00:30:00.000Z") == [row]
    assert await store.pairings("2000-01-01T02:00:00.000Z") == []
    assert await store.approve("OLDCODE2", "2000-01-01T02:00:00.000Z") is None
    assert await store.chats() == []


def test_a_stranger_is_answered_at_most_once_a_minute() -> None:
    now = [1000.0]
    p = Pairing(None, clock=lambda: now[0])  # type: ignore[arg-type]
    assert p.may_reply(5) and not p.may_reply(5) and p.may_reply(6)
    now[0] += pairing.REPLY_EVERY_S - 1
    assert not p.may_reply(5)
    now[0] += 2
    assert p.may_reply(5)
