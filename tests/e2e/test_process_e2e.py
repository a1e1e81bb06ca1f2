"""The ``famulus serve`` process itself: one server per home, the port and the
settings checked before anything starts, log lines, the proxy-header rule and a
prompt, honest stop. Real processes throughout."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from tests.e2e.test_chat_e2e import AUTH, KEY, new_session, register_scripted, send
from tests.support.live import ServerProcess, free_port, wait_healthy
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(["scripted-model"]) as server:
        yield server  # type: ignore[misc]


def serve_once(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A ``famulus serve`` expected to refuse to start: its status and output."""
    full_env = {
        **os.environ,
        "FAMULUS_HOME": str(home),
        "FAMULUS_API_KEY": KEY,
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "famulus.cli", "serve", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def snapshot(home: Path) -> dict[str, tuple[int, int]]:
    """Every file in ``home`` with its size and mtime: proof that nothing changed."""
    return {
        str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


@contextmanager
def frozen(server: ServerProcess) -> Iterator[None]:
    """The server's process stopped (SIGSTOP) for the block, then resumed."""
    assert server.proc is not None
    server.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        server.proc.send_signal(signal.SIGCONT)


def replay(base_url: str, sid: str) -> list[dict[str, object]]:
    """The session's whole event log (a cursor of 0 asks for a replay)."""
    with SSECollector(base_url, AUTH, sid, after=0) as sse:
        sse.wait_for("run_cancelled")
    return [{"type": e.event, **e.data} for e in sse.events]


def test_second_server_on_a_home_in_use_changes_nothing(
    tmp_path: Path, openai_server: ScriptedOpenAI
) -> None:
    home = tmp_path / "home"
    a = ServerProcess(home, env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}).start()
    try:
        with httpx.Client(base_url=a.base_url, headers=AUTH, timeout=10) as http:
            register_scripted(http, openai_server)
            # Long enough to outlast the three refused starts even on a loaded
            # machine; it is cancelled once they are done.
            openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(1200)), chunk_delay=0.05))
            sid = new_session(http)
            with SSECollector(a.base_url, AUTH, sid, stream=True) as sse:
                run = send(http, sid, "a slow answer")
                sse.wait_for("text_delta", count=2)
                # Server A is frozen while the others try: it holds its lock and
                # its port all the same, but its own timed writes (the message
                # indexer's 30 s pass lands here on a loaded machine) cannot then
                # pass for something a refused server did.
                with frozen(a):
                    before = snapshot(home)
                    same_port = serve_once(home, "--port", str(a.port))
                    other_port = serve_once(home, "--port", str(free_port()))
                    other_home = serve_once(tmp_path / "other", "--port", str(a.port))
                    assert snapshot(home) == before
                assert not any(
                    e.event.startswith("run_") and e.event != "run_started" for e in sse.events
                )
                assert http.post("/cancel", json={"run_id": run["run_id"]}).status_code == 200
                sse.wait_for("run_cancelled", run_id=str(run["run_id"]))
        assert a.proc is not None
        for refused in (same_port, other_port):
            assert refused.returncode == 1, refused.stderr
            line = refused.stderr.strip()
            assert "\n" not in line and "Traceback" not in line
            assert str(home) in line and f"PID {a.proc.pid}" in line and str(a.port) in line
        assert other_home.returncode == 1
        assert other_home.stderr.strip().count("\n") == 0
        assert f"127.0.0.1:{a.port}" in other_home.stderr and "in use" in other_home.stderr
        assert not (tmp_path / "other").exists()
        events = replay(a.base_url, sid)
        types = [e["type"] for e in events]
        assert "run_error" not in types and types.count("run_cancelled") == 1
    finally:
        a.stop()


def test_home_is_free_again_after_kill_9(tmp_path: Path) -> None:
    """The lock dies with its process: a crash never leaves the home locked."""
    server = ServerProcess(tmp_path / "home", env={"FAMULUS_API_KEY": KEY}).start()
    server.stop(kill=True)
    server.start()
    server.stop()


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--port", "99999"], {}, "--port='99999'"),
        (["--port", "-5"], {}, "--port='-5'"),
        (["--port", "six"], {}, "--port='six'"),
        ([], {"FAMULUS_PORT": "70000"}, "FAMULUS_PORT='70000'"),
        ([], {"FAMULUS_TIMEZONE": "Mars/Olympus"}, "FAMULUS_TIMEZONE='Mars/Olympus'"),
        ([], {"FAMULUS_LOG_FORMAT": "xml"}, "FAMULUS_LOG_FORMAT='xml'"),
        ([], {"FAMULUS_LOG_LEVEL": "loud"}, "FAMULUS_LOG_LEVEL='loud'"),
        ([], {"FAMULUS_NOTIFY_RETRY_DELAYS_S": "soon"}, "FAMULUS_NOTIFY_RETRY_DELAYS_S='soon'"),
    ],
)
def test_invalid_setting_stops_the_start_with_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str], named: str
) -> None:
    result = serve_once(tmp_path / "home", *args, **env)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "Traceback" not in result.stderr
    assert lines[0].startswith("famulus: invalid setting ")
    assert not (tmp_path / "home").exists()


def test_port_0_takes_a_free_port_and_logs_it(tmp_path: Path) -> None:
    log_path = tmp_path / "serve.log"
    env = {**os.environ, "FAMULUS_HOME": str(tmp_path / "home"), "FAMULUS_API_KEY": KEY}
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "famulus.cli", "serve", "--port", "0"],
            env=env,
            stdout=log,
            stderr=log,
        )
    try:
        found = None
        deadline = time.monotonic() + 20
        while found is None and time.monotonic() < deadline:
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", log_path.read_text())
            time.sleep(0.05)
        assert found, log_path.read_text()
        port = int(found.group(1))
        assert port not in (0, 6877)
        wait_healthy(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        proc.wait(10)


def test_every_log_line_has_a_timestamp_and_level(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "home", env={"FAMULUS_API_KEY": KEY}).start()
    httpx.get(f"{server.base_url}/health")
    server.stop()
    lines = [ln for ln in server.output().splitlines() if ln.strip()]
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR|DEBUG) \S+: ")
    assert lines and all(stamp.match(ln) for ln in lines), lines
    assert any('"GET /health HTTP/1.1" 200' in ln for ln in lines)


def test_json_log_format(tmp_path: Path) -> None:
    env = {"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_FORMAT": "json"}
    server = ServerProcess(tmp_path / "home", env=env).start()
    httpx.get(f"{server.base_url}/health")
    server.stop()
    entries = [json.loads(ln) for ln in server.output().splitlines() if ln.strip()]
    assert all({"ts", "level", "logger", "message"} <= e.keys() for e in entries)
    access = [e for e in entries if e["logger"] == "uvicorn.access"]
    assert access and '"GET /health HTTP/1.1" 200' in access[0]["message"]


def _wrong_keys(base_url: str, forwarded: bool) -> list[int]:
    statuses = []
    for i in range(6):
        headers = {"Authorization": "Bearer wrong"}
        if forwarded:
            headers["X-Forwarded-For"] = f"203.0.113.{i + 1}"
        statuses.append(httpx.get(f"{base_url}/sessions", headers=headers).status_code)
    return statuses


def test_forwarded_for_cannot_dodge_the_auth_throttle(tmp_path: Path) -> None:
    env = {"FAMULUS_API_KEY": KEY, "FAMULUS_AUTH_MAX_FAILURES": "3"}
    server = ServerProcess(tmp_path / "home", env=env).start()
    try:
        assert _wrong_keys(server.base_url, forwarded=True) == [401] * 3 + [429] * 3
    finally:
        server.stop()


def test_trusted_proxy_forwarded_for_is_believed(tmp_path: Path) -> None:
    env = {
        "FAMULUS_API_KEY": KEY,
        "FAMULUS_AUTH_MAX_FAILURES": "3",
        "FAMULUS_TRUSTED_PROXIES": "127.0.0.1",
    }
    server = ServerProcess(tmp_path / "home", env=env).start()
    try:  # each forwarded client has its own count
        assert _wrong_keys(server.base_url, forwarded=True) == [401] * 6
    finally:
        server.stop()


def test_sigterm_with_streams_open_stops_within_a_second(
    tmp_path: Path, openai_server: ScriptedOpenAI
) -> None:
    server = ServerProcess(
        tmp_path / "home", env={"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    ).start()
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
            register_scripted(http, openai_server)
            openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(500)), chunk_delay=0.05))
            sid = new_session(http)
            feeds = []
            for path in ("/automations/events", "/memory/events"):
                feed_open = threading.Event()
                feed = threading.Thread(target=_hold_feed, args=(server.base_url, path, feed_open))
                feed.start()
                assert feed_open.wait(5)
                feeds.append(feed)
            with SSECollector(server.base_url, AUTH, sid, stream=True) as sse:
                run = send(http, sid, "talk until stopped")
                sse.wait_for("text_delta", count=2)
                assert server.proc is not None
                t0 = time.monotonic()
                server.proc.terminate()
                server.proc.wait(10)
                stopped_in = time.monotonic() - t0
            for feed in feeds:
                feed.join(5)
        assert stopped_in <= 1.0, stopped_in
        server.proc = None
        server.start()
        with SSECollector(server.base_url, AUTH, sid, after=0) as sse:
            err = sse.wait_for("run_error").data
        assert err["run_id"] == run["run_id"]
    finally:
        server.stop()


def _hold_feed(base_url: str, path: str, opened: threading.Event) -> None:
    """Keep a live feed (/automations/events, /memory/events) open until the server ends it."""
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(5, read=None)) as http,
            http.stream("GET", f"{base_url}{path}", headers=AUTH) as response,
        ):
            for _ in response.iter_lines():
                opened.set()
    except (httpx.HTTPError, OSError):
        pass
    finally:
        opened.set()


def test_port_in_use_by_another_program(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = serve_once(tmp_path / "home", "--port", str(port))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"famulus: cannot listen on 127.0.0.1:{port}: address already in use"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_server_process_is_not_dumpable(tmp_path: Path) -> None:
    """PR_GET_DUMPABLE (3) reads 0 in a process that ran the server's start-up step,
    so /proc/<pid>/environ is closed to other processes of the same user."""
    code = (
        "import ctypes; from famulus.serve import not_dumpable; not_dumpable(); "
        "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
