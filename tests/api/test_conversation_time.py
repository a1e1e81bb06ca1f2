"""Time in conversation recall (issue 12): a query naming a period ranks the
messages said in it, or naming a day in it, first; date-only bounds are days
in the configured time zone. This module's server runs in Europe/Berlin."""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from tests.support.sessions import new_session

from famulus.memory import when
from famulus.memory.conversations import ConversationIndex, make_filter
from famulus.settings import Settings
from famulus.timeutil import utcnow

SEARCH = "/memory/conversations/search"
ZONE = "Europe/Berlin"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"timezone": ZONE})


def _index(app: Any) -> ConversationIndex:
    index: ConversationIndex = app.state.container.memory.service.conversations
    return index


@pytest.fixture(autouse=True)
async def _manual_indexing(app: Any) -> None:
    """The background indexer is stopped: each test indexes when it says."""
    await _index(app).stop()


async def _say(app: Any, sid: str, text: str, when: str, role: str = "user") -> int:
    """A history row written as the chat writes it, back-dated to ``when``."""
    row = await app.state.container.core.sessions.store.add_message(sid, role, text)
    await app.state.container.core.db.write(
        lambda conn: conn.execute("UPDATE messages SET created_at = ? WHERE id = ?", (when, row.id))
    )
    return int(row.id)


async def _search(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await client.post(SEARCH, json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _mid(month_start: date, months: int) -> str:
    """The 15th of the month ``months`` away from ``month_start``, at noon UTC."""
    index = month_start.year * 12 + month_start.month - 1 + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}-15T12:00:00Z"


async def test_a_query_naming_a_month_ranks_that_months_message_first(
    app: Any, client: httpx.AsyncClient
) -> None:
    query = "What did I eat for dinner with Anna in June?"
    span = when.time_range(query, utcnow(), ZONE)
    assert span is not None and app.state.container.memory.service.zone == ZONE
    sid = await new_session(client, "Food")
    may = await _say(app, sid, "I ate pizza for dinner with Anna at Luigi's", _mid(span.start, -1))
    june = await _say(app, sid, "Anna and I had sushi at Kaito", _mid(span.start, 0))
    july = await _say(app, sid, "I ate pasta for dinner with Anna at Luigi's", _mid(span.start, 1))
    dentist = await _say(app, sid, "The dentist fixed a loose filling", _mid(span.start, 0))
    await _index(app).catch_up()
    body = await _search(client, query=query)
    ids = [r["message_id"] for r in body["results"]]
    assert ids[0] == june and {may, july} <= set(ids)
    assert dentist in ids  # said in June, though the text search missed it
    assert body["time_range"] == {
        "from": span.start.isoformat(),
        "to": span.end.isoformat(),
        "text": "in June",
    }
    # Without the time stage the look-alikes win: the boost is what lifts June.
    plain = await _index(app).search(query, make_filter(), use_time=False)
    assert plain.hits[0].message_id != june and plain.time_range is None
    assert (await _search(client, query="dinner with Anna"))["time_range"] is None


async def test_a_message_naming_a_day_of_the_period_is_found_by_it(
    app: Any, client: httpx.AsyncClient
) -> None:
    sid = await new_session(client, "Health")
    april = await _say(
        app, sid, "The dentist appointment is next Friday at 9", "2026-04-28T10:00:00Z"
    )
    march = await _say(
        app, sid, "The dentist appointment is next Friday at 10", "2026-03-10T10:00:00Z"
    )
    await _say(app, sid, "The dentist appointment went fine", "2026-06-02T10:00:00Z")
    await _index(app).catch_up()
    db = app.state.container.core.db

    def days(conn: Any) -> dict[int, tuple[str | None, str | None]]:
        rows = conn.execute("SELECT message_id, event_start, event_end FROM conversation_chunks")
        return {int(r[0]): (r[1], r[2]) for r in rows}

    dated = await db.read(days)
    assert dated[april] == ("2026-05-01", "2026-05-01")  # said in April, about a May day
    assert dated[march] == ("2026-03-13", "2026-03-13")
    body = await _search(client, query="When was my dentist appointment in May 2026?")
    assert body["results"][0]["message_id"] == april
    assert body["time_range"] == {"from": "2026-05-01", "to": "2026-05-31", "text": "in May 2026"}
    # The agent's tool: when each message was said (in the person's zone) and
    # the day it names; the same filters as the endpoint.
    reading, _ = await app.state.container.memory.toolsets()
    tool = reading.tools["search_conversations"].function
    answer = await tool(query="dentist appointment in May 2026", until="2026-04-30")
    assert f"said 2026-04-28 12:00 {ZONE}, about 2026-05-01" in answer
    assert "said 2026-03-10 11:00" in answer and "went fine" not in answer
    assert "Messages of 2026-05-01 to 2026-05-31" in answer

    # Chunks indexed before the columns existed are dated by the indexer.
    def undate(conn: Any) -> None:
        conn.execute("UPDATE conversation_chunks SET event_start = NULL, event_end = NULL")
        conn.execute("UPDATE conversation_index_state SET dated_chunk_id = 0")

    await db.write(undate)
    assert set((await db.read(days)).values()) == {(None, None)}
    assert await _index(app).catch_up() == 0  # no new message, yet the old chunks are read
    assert await db.read(days) == dated


async def test_date_only_bounds_are_days_in_the_configured_zone(
    app: Any, client: httpx.AsyncClient
) -> None:
    sid = await new_session(client, "Night")
    # 23:30 in Berlin on 8 May, and 01:30 on 9 May; both are 8 May in UTC.
    early = await _say(app, sid, "Owls call at night", "2026-05-08T21:30:00Z")
    late = await _say(app, sid, "Owls still call at night", "2026-05-08T23:30:00Z")
    await _index(app).catch_up()

    async def ids(**bounds: str) -> set[int]:
        return {r["message_id"] for r in (await _search(client, query="owls", **bounds))["results"]}

    assert await ids(since="2026-05-09") == {late}
    assert await ids(until="2026-05-08") == {early}
    assert await ids(since="2026-05-08T22:00:00Z") == {late}  # a datetime is as written
    # Without a configured zone a date is a UTC day, as before.
    assert make_filter(since="2026-05-09").since == "2026-05-09T00:00:00.000Z"
    berlin = make_filter(since="2026-05-09", until="2026-05-09", zone=ZONE)
    assert (berlin.since, berlin.until) == ("2026-05-08T22:00:00.000Z", "2026-05-09T22:00:00.000Z")


def test_a_bound_before_the_year_1000_keeps_its_order() -> None:
    """Timestamps compare as text: a year written "500-…" sorted after "2026-…",
    so ``since=0500-01-01`` found nothing instead of everything."""
    assert make_filter(since="0500-01-01").since == "0500-01-01T00:00:00.000Z"
    assert make_filter(until="0999-12-31T23:00:00Z").until == "0999-12-31T23:00:00.001Z"


def test_an_overlong_time_zone_is_a_configuration_error() -> None:
    """ZoneInfo reads a file by the name: one too long for the file system
    raised OSError, a traceback at start-up instead of the setting's message."""
    with pytest.raises(ValidationError, match="IANA time zone"):
        Settings(timezone="Europe/" + "x" * 300)
