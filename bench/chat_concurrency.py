"""The chat path's cost under concurrency (not part of the tests).

Starts a real ``famulus serve`` subprocess on loopback (temporary
FAMULUS_HOME) and an instant echo OpenAI-compatible model (the scripted
server, answering every request with the last user message at once). Then,
for 1, 10 and 50 sessions chatting at the same time, each session holding its
own SSE stream, it measures:

- POST /chat/message → ``run_started`` and → ``run_finished`` (p50/p95),
  received on the session's stream;
- server CPU per turn (utime + stime of the server process from
  /proc/<pid>/stat, before and after all turns of that level);
- cold start (process spawned → GET /health answers 200);
- RSS at idle (after start, before any turn), after two warm-up turns, and
  once the local embedding model is loaded (one fact embedded).

Memory extraction is held off (it would call the echo model as the memory
model); recall, memory's prompt context and its after-run bookkeeping run as
usual.

The bench client shares the machine with the server, so both compete for the
same cores; compare figures taken in the same conditions.

    .venv/bin/python bench/chat_concurrency.py [--rounds 4] [--levels 1,10,50] [--facts 0]
        [--profile stacks.txt]   # py-spy (pip install py-spy) samples the server
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.live import free_port  # noqa: E402
from tests.support.scripted_openai import ScriptedOpenAI, Turn  # noqa: E402

KEY = "bench-key-abcdefghijklmnopqrstuvwxyz0123456"
AUTH = {"Authorization": f"Bearer {KEY}"}
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def echo(body: dict[str, Any]) -> Turn:
    """Answer with the last user message, at once."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    text = content if isinstance(content, str) else json.dumps(content)
    return Turn(text=f"echo: {text}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    base_url: str
    cold_start_s: float
    log: Path


def start_server(home: Path) -> Server:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "FAMULUS_HOME": str(home),
        "FAMULUS_PORT": str(port),
        "FAMULUS_HOST": "127.0.0.1",
        "FAMULUS_API_KEY": KEY,
        "FAMULUS_LOG_LEVEL": "warning",
        # Memory extraction would ask the echo model too (after 20 messages in a
        # session, every turn while its answer cannot be parsed): not the chat path.
        "FAMULUS_MEMORY_EXTRACT_AFTER_MESSAGES": "1000000",
        "FAMULUS_MEMORY_QUIET_S": "3600",
    }
    log = home.parent / "serve.log"
    t0 = time.monotonic()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "famulus.cli", "serve"], env=env, stdout=out, stderr=out
        )
    while time.monotonic() - t0 < 60:
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return Server(proc, base, time.monotonic() - t0, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.01)
    proc.kill()
    raise RuntimeError(f"server did not start; see {log}")


@dataclass
class Stream:
    """One session's SSE stream: when each (run_id, event) arrived."""

    session_id: str
    seen: dict[tuple[str, str], float] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self, http: httpx.AsyncClient, opened: asyncio.Event) -> None:
        try:
            await self._read(http, opened)
        except httpx.HTTPError as exc:  # the turn waiting on it times out and says so
            print(f"stream of {self.session_id} dropped: {exc!r}", file=sys.stderr)

    async def _read(self, http: httpx.AsyncClient, opened: asyncio.Event) -> None:
        url = f"/chat/events/{self.session_id}"
        params = {"stream": "true", "after": "0"}
        async with http.stream("GET", url, params=params, timeout=None) as response:
            opened.set()
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    event = line.partition(":")[2].strip()
                elif line.startswith("data:"):
                    data = json.loads(line.partition(":")[2])
                    self.seen[(str(data.get("run_id")), event)] = time.monotonic()
                    self.changed.set()

    async def wait(self, run_id: str, event: str, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while (run_id, event) not in self.seen:
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {event} for {run_id}")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                pass
        return self.seen[(run_id, event)]


async def turn(http: httpx.AsyncClient, stream: Stream, text: str) -> tuple[float, float]:
    t0 = time.monotonic()
    response = await http.post(
        "/chat/message", json={"message": text, "session_id": stream.session_id}
    )
    response.raise_for_status()
    run_id = response.json()["run_id"]
    started = await stream.wait(run_id, "run_started")
    finished = await stream.wait(run_id, "run_finished")
    return started - t0, finished - t0


async def level(http: httpx.AsyncClient, pid: int, sessions: int, rounds: int) -> dict[str, float]:
    streams = []
    for i in range(sessions):
        made = await http.post("/sessions", json={"name": f"bench {sessions}/{i}"})
        streams.append(Stream(made.json()["session_id"]))
    readers = []
    for s in streams:
        opened = asyncio.Event()
        readers.append(asyncio.create_task(s.read(http, opened)))
        await asyncio.wait_for(opened.wait(), 10)
    started: list[float] = []
    finished: list[float] = []
    cpu0 = cpu_seconds(pid)
    for r in range(rounds):
        results = await asyncio.gather(*(turn(http, s, f"round {r}") for s in streams))
        started += [a for a, _ in results]
        finished += [b for _, b in results]
    cpu = cpu_seconds(pid) - cpu0
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    return {
        "turns": len(started),
        "started_p50": statistics.median(started) * 1000,
        "started_p95": pct(started, 0.95) * 1000,
        "finished_p50": statistics.median(finished) * 1000,
        "finished_p95": pct(finished, 0.95) * 1000,
        "cpu_per_turn": cpu / len(started) * 1000,
    }


async def drive(
    server: Server,
    model_url: str,
    levels: list[int],
    rounds: int,
    facts: int,
    profile: str | None,
) -> None:
    pid = server.proc.pid
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=500)
    async with httpx.AsyncClient(
        base_url=server.base_url, headers=AUTH, timeout=60, limits=limits
    ) as http:
        idle = rss_mb(pid)
        made = await http.post(
            "/models/custom",
            json={
                "model_id": "echo-model",
                "base_url": model_url,
                "context_window": 32000,
                "max_output_tokens": 1000,
            },
        )
        made.raise_for_status()
        if facts:  # recall then embeds every message (the local model loads now)
            body = {"facts": [{"text": f"The person's note number {i}."} for i in range(facts)]}
            (await http.post("/facts/import", json=body)).raise_for_status()
        await level(http, pid, 1, 2)  # warm-up
        after_turn = rss_mb(pid)
        print(f"cold start to /health: {server.cold_start_s * 1000:.0f} ms")
        print(f"RSS idle: {idle:.0f} MB; after warm-up turns ({facts} facts): {after_turn:.0f} MB")
        spy = profiler(pid, profile)
        print(
            f"{'sessions':>8} {'turns':>5}  {'run_started p50/p95 ms':>22}"
            f"  {'run_finished p50/p95 ms':>23}  {'server CPU/turn':>15}"
        )
        for n in levels:
            f = await level(http, pid, n, max(rounds, 20 // n))
            print(
                f"{n:>8} {f['turns']:>5.0f}  {f['started_p50']:>10.1f} / {f['started_p95']:<9.1f}"
                f"  {f['finished_p50']:>11.1f} / {f['finished_p95']:<9.1f}"
                f"  {f['cpu_per_turn']:>12.1f} ms"
            )
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        if not facts:  # one fact embedded loads the local embedding model
            made = await http.post("/facts", json={"text": "The person likes green tea."})
            made.raise_for_status()
        print(f"RSS at the end, embedding model loaded: {rss_mb(pid):.0f} MB")


def profiler(pid: int, out: str | None) -> subprocess.Popen[bytes] | None:
    """py-spy sampling the server during the measured turns (collapsed stacks)."""
    if out is None:
        return None
    spy = Path(sys.executable).parent / "py-spy"
    command = [str(spy), "record", "--pid", str(pid), "--format", "raw", "-o", out, "-r", "200"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # attached before the first turn
    return proc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4, help="turns per session per level")
    parser.add_argument("--levels", default="1,10,50")
    parser.add_argument(
        "--facts", type=int, default=0, help="facts in memory (>0: recall embeds each message)"
    )
    parser.add_argument("--profile", help="write py-spy collapsed stacks of the server here")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    model = ScriptedOpenAI(["echo-model"])
    model.responder = echo
    model.start()
    home = Path(tempfile.mkdtemp()) / "home"
    server = start_server(home)
    try:
        print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        asyncio.run(drive(server, model.base_url, levels, args.rounds, args.facts, args.profile))
    finally:
        server.proc.terminate()
        server.proc.wait(10)
        model.stop()


if __name__ == "__main__":
    main()
