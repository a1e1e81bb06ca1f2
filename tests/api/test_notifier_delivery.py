"""Notifier deliveries of automation results: retried with backoff on passing
failures (connection refused, 5xx, 429 with Retry-After), final on other 4xx,
every try shown with the run and on the automation feed. The real app and a
real webhook server on loopback; the backoff is shortened by the setting."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.chat_models import install_model, scripted
from tests.support.fake_http import recording_server
from tests.support.live import free_port
from tests.support.triggers import never_soon

from famulus.settings import Settings

DELAYS = [0.05, 0.05, 0.05]


@pytest.fixture
def settings(home: Path, tmp_path: Path) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        notify_retry_delays_s=DELAYS,
        notify_retry_after_max_s=5.0,
    )


class Script:
    """Webhook answers in order (the last repeats), with when each came."""

    def __init__(self, *answers: tuple[int, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.times: list[float] = []
        self.bodies: list[Any] = []
        self.lock = threading.Lock()

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            self.times.append(time.monotonic())
            self.bodies.append(body)
            status, headers = self.answers[min(len(self.times), len(self.answers)) - 1]
        return status, {}, headers


@pytest.fixture
async def feed(app: Any) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
    """What GET /automations/events streams."""
    svc = app.state.container.automations
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    svc.listeners.add(queue)
    yield queue
    svc.listeners.discard(queue)


async def _automation_with_hook(client: httpx.AsyncClient, url: str) -> int:
    r = await client.post(
        "/notifiers/configs", json={"name": "hook", "type": "webhook", "config": {"url": url}}
    )
    assert r.status_code == 201, r.text
    body = {
        "name": "Brief",
        "description": "Summarize my day.",
        "trigger": never_soon(),
        "notifiers": ["hook"],
    }
    r = await client.post("/automations", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


async def _until(
    client: httpx.AsyncClient, aid: int, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The automation, its run over, once ``done(delivery)`` holds for its
    latest run's delivery."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        body = (await client.get(f"/automations/{aid}")).json()
        ready = not body["running"] and body["runs"] and body["runs"][0]["deliveries"]
        if ready and done(body["runs"][0]["deliveries"][0]):
            return dict(body)
        await asyncio.sleep(0.02)
    raise AssertionError(f"delivery never got there: {body['runs']}")


def _deliveries(feed: asyncio.Queue[dict[str, Any]]) -> list[dict[str, Any]]:
    got = []
    while not feed.empty():
        event = feed.get_nowait()
        if event["type"] == "notifier_delivery":
            got.append(event)
    return got


async def test_500_twice_then_delivered_on_try_three(
    app: Any, client: httpx.AsyncClient, feed: asyncio.Queue[dict[str, Any]]
) -> None:
    install_model(app, scripted("Your day: two meetings."))
    hook = Script((500, {}), (500, {}), (200, {}))
    with recording_server(hook) as server:
        aid = await _automation_with_hook(client, server.url)
        await client.post(f"/automations/{aid}/run")
        body = await _until(client, aid, lambda d: d["status"] == "delivered")
    run = body["runs"][0]
    delivery = run["deliveries"][0]
    assert delivery["notifier"] == "hook" and delivery["attempts"] == 3
    assert [t["status"] for t in delivery["tries"]] == ["error", "error", "ok"]
    assert [t["attempt"] for t in delivery["tries"]] == [1, 2, 3]
    assert "HTTP 500" in delivery["tries"][0]["error"] and delivery["tries"][2]["error"] is None
    assert delivery["next_attempt_at"] is None and delivery["finished_at"]
    # the run's output is intact and the run is fine
    assert run["status"] == "ok" and run["result"] == "Your day: two meetings."
    assert body["last_status"] == "ok"
    assert len(hook.bodies) == 3
    assert all(b["text"] == "Your day: two meetings." for b in hook.bodies)
    # every try went out on the automation feed
    events = _deliveries(feed)
    assert [(e["status"], e["attempt"]) for e in events] == [
        ("retrying", 1),
        ("retrying", 2),
        ("delivered", 3),
    ]
    assert events[0]["id"] == aid and events[0]["notifier"] == "hook"
    assert events[0]["next_attempt_at"] and "HTTP 500" in events[0]["error"]
    assert events[2]["error"] is None and events[2]["next_attempt_at"] is None


async def test_429_retry_after_is_honoured(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted("done"))
    hook = Script((429, {"Retry-After": "1"}), (200, {}))
    with recording_server(hook) as server:
        aid = await _automation_with_hook(client, server.url)
        await client.post(f"/automations/{aid}/run")
        retrying = await _until(client, aid, lambda d: d["attempts"] >= 1)
        first = retrying["runs"][0]["deliveries"][0]
        assert first["status"] in ("retrying", "delivered")
        body = await _until(client, aid, lambda d: d["status"] == "delivered")
    assert len(hook.times) == 2
    # the schedule says 0.05 s; the receiver asked for 1 s, and got it
    assert hook.times[1] - hook.times[0] >= 0.95
    tries = body["runs"][0]["deliveries"][0]["tries"]
    assert "HTTP 429" in tries[0]["error"] and tries[1]["status"] == "ok"


async def test_other_4xx_is_final_and_marks_the_run(
    app: Any, client: httpx.AsyncClient, feed: asyncio.Queue[dict[str, Any]]
) -> None:
    install_model(app, scripted("Your day: two meetings."))
    hook = Script((404, {}), (200, {}))
    with recording_server(hook) as server:
        aid = await _automation_with_hook(client, server.url)
        await client.post(f"/automations/{aid}/run")
        body = await _until(client, aid, lambda d: d["status"] == "failed")
        assert len(hook.times) == 1
    run = body["runs"][0]
    # final: nothing is scheduled, so no second try can come
    assert run["deliveries"][0]["attempts"] == 1
    assert run["deliveries"][0]["next_attempt_at"] is None
    assert not await app.state.container.deliveries.store.waiting()
    assert "HTTP 404" in run["deliveries"][0]["last_error"]
    # the run's output stays, the reason follows it, the run counts as an error
    assert run["status"] == "error"
    assert run["result"].startswith("Your day: two meetings.")
    assert "Delivery problem: hook:" in run["result"] and "HTTP 404" in run["result"]
    assert body["last_status"] == "error" and body["last_result"] == run["result"]
    assert [e["status"] for e in _deliveries(feed)] == ["failed"]


async def test_unreachable_receiver_fails_after_the_last_try(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted("done"))
    aid = await _automation_with_hook(client, f"http://127.0.0.1:{free_port()}/hook")
    await client.post(f"/automations/{aid}/run")
    body = await _until(client, aid, lambda d: d["status"] == "failed")
    delivery = body["runs"][0]["deliveries"][0]
    assert delivery["attempts"] == len(DELAYS) + 1
    assert [t["status"] for t in delivery["tries"]] == ["error"] * (len(DELAYS) + 1)
    assert "could not be reached" in delivery["last_error"]
    assert body["runs"][0]["status"] == "error" and body["runs"][0]["result"].startswith("done")


async def test_a_fixed_notifier_gets_the_pending_retry(app: Any, client: httpx.AsyncClient) -> None:
    """A retry goes to the notifier's current config, so fixing a wrong URL
    with PATCH while a delivery waits lets that delivery land."""
    install_model(app, scripted("done"))
    queue = app.state.container.deliveries
    queue.policy = type(queue.policy)((2.0, 2.0), 5.0)  # time to fix it in between
    with recording_server(lambda m, p, b: (404 if p == "/old" else 500, {})) as bad:
        aid = await _automation_with_hook(client, bad.url + "/down")
        await client.post(f"/automations/{aid}/run")
        await _until(client, aid, lambda d: d["status"] == "retrying")
    with recording_server(lambda m, p, b: (200, {})) as good:
        r = await client.patch("/notifiers/configs/hook", json={"config": {"url": good.url}})
        assert r.status_code == 200, r.text
        body = await _until(client, aid, lambda d: d["status"] == "delivered")
        assert good.requests[0][2]["text"] == "done"
    tries = body["runs"][0]["deliveries"][0]["tries"]
    assert [t["status"] for t in tries][-1] == "ok" and len(tries) >= 2


class _FlakyMailServer:
    """An SMTP server that answers DATA with the given replies in order (the
    last repeats) and keeps what it accepted."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen = 0
        self.accepted: list[bytes] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.seen += 1
        reply = self.replies[min(self.seen, len(self.replies)) - 1]
        if reply.startswith("250"):
            self.accepted.append(envelope.content)
        return reply


@pytest.mark.parametrize(
    ("replies", "final", "tries"),
    [
        (("451 4.3.0 Try again later", "250 OK"), "delivered", 2),
        (("554 5.7.1 Rejected as spam", "250 OK"), "failed", 1),
    ],
)
async def test_mail_4xx_is_retried_and_5xx_is_final(
    home: Path, tmp_path: Path, replies: tuple[str, ...], final: str, tries: int
) -> None:
    from aiosmtpd.controller import Controller

    from famulus.app import create_app

    handler = _FlakyMailServer(*replies)
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    settings = Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_from="famulus@example.org",
        notify_retry_delays_s=DELAYS,
    )
    app = create_app(settings)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://t",
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as client:
                install_model(app, scripted("done"))
                r = await client.post(
                    "/notifiers/configs",
                    json={"name": "mail", "type": "email", "config": {"to": "me@example.org"}},
                )
                assert r.status_code == 201
                a = await client.post(
                    "/automations",
                    json={
                        "name": "Brief",
                        "description": "d",
                        "trigger": never_soon(),
                        "notifiers": ["mail"],
                    },
                )
                aid = a.json()["id"]
                await client.post(f"/automations/{aid}/run")
                body = await _until(client, aid, lambda d: d["status"] == final)
    finally:
        controller.stop()
    delivery = body["runs"][0]["deliveries"][0]
    assert delivery["attempts"] == tries == handler.seen
    assert replies[0].split(" ", 1)[1] in delivery["tries"][0]["error"]
    assert len(handler.accepted) == (1 if final == "delivered" else 0)
