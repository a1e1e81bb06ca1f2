"""End to end: a notifier delivery waiting for its retry survives ``kill -9``
of a real ``famulus serve``; the restarted server delivers it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
from tests.support.fake_http import recording_server
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.triggers import never_soon

KEY = "e2e-notify-key-abcdefghijklmnopqrstuvwxyz01"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODEL = "scripted-model"
OUTPUT = "Morning summary: three meetings."


def _setup(http: httpx.Client, openai: ScriptedOpenAI, hook_url: str) -> int:
    r = http.post(
        "/models/custom",
        json={
            "model_id": MODEL,
            "base_url": openai.base_url,
            "context_window": 8000,
            "max_output_tokens": 500,
        },
    )
    assert r.status_code == 201, r.text
    assert http.patch("/config", json={"chat_model": MODEL}).status_code == 200
    r = http.post(
        "/notifiers/configs",
        json={"name": "hook", "type": "webhook", "config": {"url": hook_url}},
    )
    assert r.status_code == 201, r.text
    r = http.post(
        "/automations",
        json={
            "name": "Brief",
            "description": "Summarize my day.",
            "trigger": never_soon(),
            "notifiers": ["hook"],
        },
    )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _delivery_when(http: httpx.Client, aid: int, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    seen: Any = None
    while time.monotonic() < deadline:
        runs = http.get(f"/automations/{aid}").json()["runs"]
        seen = runs[0]["deliveries"] if runs else None
        if seen and seen[0]["status"] == status:
            return {"run": runs[0], **seen[0]}
        time.sleep(0.05)
    raise AssertionError(f"no {status} delivery; last seen {json.dumps(seen)}")


def test_pending_retry_is_delivered_after_kill_9(tmp_path: Path) -> None:
    state = {"up": False, "delivered": 0}

    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        if not state["up"]:
            return 503, {}
        state["delivered"] += 1
        return 200, {}

    with ScriptedOpenAI([MODEL]) as openai, recording_server(answer) as hook:
        openai.default = Turn(text=OUTPUT)
        env = {
            "FAMULUS_API_KEY": KEY,
            "FAMULUS_LOG_LEVEL": "warning",
            # a try every second, many times: the retry is pending at the kill
            "FAMULUS_NOTIFY_RETRY_DELAYS_S": json.dumps([2.0] * 20),
        }
        server = ServerProcess(tmp_path / "home", env=env).start()
        try:
            with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
                aid = _setup(http, openai, hook.url)
                assert http.post(f"/automations/{aid}/run").status_code == 202
                waiting = _delivery_when(http, aid, "retrying")
                assert waiting["run"]["result"] == OUTPUT
            server.stop(kill=True)  # SIGKILL: no shutdown code runs
            state["up"] = True
            server.start()
            with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
                done = _delivery_when(http, aid, "delivered")
        finally:
            server.stop()
    # delivered once, by the restarted server, after the tries recorded before the kill
    assert state["delivered"] == 1
    assert hook.requests[-1][2] == {"notifier": "hook", "title": "Brief", "text": OUTPUT}
    failed = done["attempts"] - 1
    assert failed >= 1 and [t["status"] for t in done["tries"]] == ["error"] * failed + ["ok"]
    assert all("HTTP 503" in t["error"] for t in done["tries"][:-1])
    assert done["run"]["status"] == "ok" and done["run"]["result"] == OUTPUT
