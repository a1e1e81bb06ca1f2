"""Chat latency against the scripted OpenAI-compatible server (not part of the tests).

Starts a real ``famulus serve`` and a scripted server on loopback, then for N
runs measures (a) POST /chat/message → first SSE event of the run, and (b) the
scripted model's last token written → ``run_finished`` received. Prints the
median/p90 of each and the SSE transcript of one conversation (a tool call and
a streamed answer).

    .venv/bin/python bench/chat_latency.py [runs]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.live import ServerProcess  # noqa: E402
from tests.support.scripted_openai import ScriptedOpenAI, Turn  # noqa: E402
from tests.support.sse_collector import SSECollector  # noqa: E402

KEY = "bench-key-abcdefghijklmnopqrstuvwxyz0123456"
AUTH = {"Authorization": f"Bearer {KEY}"}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def main(runs: int = 20) -> None:
    scripted = ScriptedOpenAI(["bench-model"]).start()
    home = Path(tempfile.mkdtemp()) / "home"
    server = ServerProcess(
        home, env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    ).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            http.post(
                "/models/custom",
                json={
                    "model_id": "bench-model",
                    "base_url": scripted.base_url,
                    "context_window": 32000,
                    "max_output_tokens": 1000,
                },
            ).raise_for_status()
            sid = http.post("/sessions", json={"name": "bench"}).json()["session_id"]
            first, finish = [], []
            with SSECollector(server.base_url, AUTH, sid, stream=True) as sse:
                for i in range(runs):
                    scripted.push(Turn(text=f"Answer number {i} in a few words."))
                    t0 = time.monotonic()
                    run_id = http.post(
                        "/chat/message", json={"message": f"q{i}", "session_id": sid}
                    ).json()["run_id"]
                    sse.wait_for("run_started", run_id=run_id)
                    idx = next(
                        k for k, e in enumerate(sse.events) if e.data.get("run_id") == run_id
                    )
                    first.append(sse.received_at[idx] - t0)
                    done = sse.wait_for("run_finished", run_id=run_id)
                    finish.append(sse.received_at[sse.events.index(done)] - scripted.last_token_at)
            print(f"runs: {runs}")
            print(
                f"POST /chat/message -> first event: median {statistics.median(first) * 1000:.1f} ms, "
                f"p90 {pct(first, 0.9) * 1000:.1f} ms"
            )
            print(
                f"last model token -> run_finished:  median {statistics.median(finish) * 1000:.1f} ms, "
                f"p90 {pct(finish, 0.9) * 1000:.1f} ms"
            )
            transcript(http, server.base_url, scripted)
    finally:
        server.stop()
        scripted.stop()


def transcript(http: httpx.Client, base_url: str, scripted: ScriptedOpenAI) -> None:
    sid = http.post("/sessions", json={"name": "transcript"}).json()["session_id"]
    scripted.push(Turn(tool_calls=[("current_time", {})]), Turn(text="It is time for tea."))
    with SSECollector(base_url, AUTH, sid, stream=True) as sse:
        run_id = http.post(
            "/chat/message", json={"message": "What time is it?", "session_id": sid}
        ).json()["run_id"]
        sse.wait_for("run_finished", run_id=run_id)
    print("\nSSE transcript (GET /chat/events/{sid}?stream=true):")
    for event in sse.events:
        head = f"id: {event.id}\n" if event.id is not None else ""
        print(f"{head}event: {event.event}\ndata: {json.dumps(event.data)}\n")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
