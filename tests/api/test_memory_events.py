"""GET /memory/events over real HTTP: a re-index tells its start, its progress
and its end; a late subscriber learns the state at once; a failure says why."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.live import serve_in_thread
from tests.support.memory_models import embeddings_server
from tests.support.sse import SSEEvent, iter_events

from famulus.app import create_app
from famulus.settings import Settings

AUTH = {"Authorization": f"Bearer {API_KEY}"}
TARGET = "openai/text-embedding-3-small"
ROWS = 100  # two batches of 64


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, Any]]]:
    """A loopback server whose openai embeddings come from a fake (0.1 s a batch)."""
    settings = Settings(
        home=tmp_path / "home",
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path,
        sse_ping_interval_s=0.5,
        codex_callback_port=0,
    )
    app = create_app(settings)
    with embeddings_server(delay=0.1) as embeddings:
        llm = app.state.container.llm

        async def credential(provider: str) -> str | None:
            return "sk-test-embeddings" if provider == "openai" else None

        monkeypatch.setattr(llm, "credential", credential)
        monkeypatch.setattr(llm, "base_url", lambda provider: embeddings["url"])
        with serve_in_thread(app) as base:
            yield base, embeddings


@contextmanager
def _client(base: str) -> Iterator[httpx.Client]:
    """A client of a server holding ``ROWS`` facts."""
    with httpx.Client(base_url=base, headers=AUTH, timeout=20) as client:
        notes = [{"text": f"Note {n}: the blue bicycle {n} is in the shed"} for n in range(ROWS)]
        assert client.post("/facts/import", json={"facts": notes}).status_code == 201
        yield client


class Reader:
    """Reads /memory/events in a thread until ``reindex_finished``."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http
        self.events: list[SSEEvent] = []
        self.opened = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.opened.wait(10), "the stream did not open"

    def _read(self) -> None:
        with self.http.stream("GET", "/memory/events") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            for event in iter_events(response, on_comment=self.opened.set):
                self.events.append(event)
                if event.event == "reindex_finished":
                    return

    def until_finished(self) -> list[SSEEvent]:
        self.thread.join(timeout=20)
        assert not self.thread.is_alive(), [e.event for e in self.events]
        return self.events


def test_a_reindex_is_streamed_from_start_to_end(live: tuple[str, dict[str, Any]]) -> None:
    base, _ = live
    with _client(base) as http:
        reader = Reader(http)
        r = http.post("/config/embedding", json={"embedding_model": TARGET})
        assert r.status_code == 202 and r.json()["total"] == ROWS
        events = reader.until_finished()
    kinds = [e.event for e in events]
    assert kinds[0] == "reindex_started" and kinds[-1] == "reindex_finished", kinds
    assert set(kinds[1:-1]) == {"reindex_progress"}, kinds
    assert events[0].data == {"type": "reindex_started", "embedding_model": TARGET, "total": ROWS}
    done = [e.data["done"] for e in events[1:-1]]
    assert done == sorted(set(done)) and done[0] > 0 and done[-1] == ROWS, done
    assert all(e.data["total"] == ROWS and e.data["embedding_model"] == TARGET for e in events[1:])
    assert events[-1].data == {
        "type": "reindex_finished",
        "embedding_model": TARGET,
        "status": "completed",
        "done": ROWS,
        "total": ROWS,
    }


def test_a_late_subscriber_gets_the_progress_at_once(live: tuple[str, dict[str, Any]]) -> None:
    base, embeddings = live
    embeddings["hold_after"] = 1  # the second batch waits for the subscriber
    with _client(base) as http:
        assert http.post("/config/embedding", json={"embedding_model": TARGET}).status_code == 202
        deadline = time.monotonic() + 10
        while http.get("/memory/audit").json()["reindex"]["done"] == 0:
            assert time.monotonic() < deadline, "the re-index made no progress"
            time.sleep(0.02)
        reader = Reader(http)
        embeddings["release"].set()
        events = reader.until_finished()
    first = events[0]
    assert first.event == "reindex_progress", [e.event for e in events]
    assert first.data["embedding_model"] == TARGET and first.data["total"] == ROWS
    assert first.data["done"] == 64  # the first batch, as the audit says
    assert "reindex_started" not in [e.event for e in events]
    assert events[-1].data["status"] == "completed" and events[-1].data["done"] == ROWS


def test_a_failed_reindex_says_failed_and_why(live: tuple[str, dict[str, Any]]) -> None:
    base, embeddings = live
    with _client(base) as http:
        embeddings["fail_after"] = 1  # the second batch gets a 500
        reader = Reader(http)
        assert http.post("/config/embedding", json={"embedding_model": TARGET}).status_code == 202
        events = reader.until_finished()
        audit = http.get("/memory/audit").json()["reindex"]
        current = http.get("/models/embedding").json()["current"]
    assert [e.event for e in events] == ["reindex_started", "reindex_progress", "reindex_finished"]
    finished = events[-1].data
    assert finished["status"] == "failed" and finished["done"] == 64 and finished["total"] == ROWS
    assert "old model stays in use" in finished["error"]
    assert finished["error"] == audit["error"]
    assert current == "local/all-MiniLM-L6-v2"


async def test_the_start_up_backfill_is_told_the_same_way(app: Any, client: Any) -> None:
    for text in ("The spare key is under the flower pot", "Dinner with Ada on Friday"):
        assert (await client.post("/facts", json={"text": text})).status_code == 201
    container = app.state.container
    service = container.memory.service
    await container.core.db.write(lambda conn: conn.execute("DELETE FROM memory_vectors"))
    feed: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    container.memory_events.listeners.add(feed)  # what GET /memory/events streams
    await service.start()  # what a restart does: load the vectors, backfill what is missing
    await asyncio.wait_for(asyncio.shield(service.catch_up.task), 10)
    got = [feed.get_nowait() for _ in range(feed.qsize())]
    model = service.current_embedding_model()
    assert got == [
        {"type": "backfill_started", "embedding_model": model, "total": 2},
        {"type": "backfill_progress", "embedding_model": model, "done": 2, "total": 2},
        {
            "type": "backfill_finished",
            "embedding_model": model,
            "status": "completed",
            "done": 2,
            "total": 2,
        },
    ]
