"""End to end: a real ``famulus serve`` process, HTTP and SSE, replay across a restart,
and first-start key generation."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import httpx
from tests.support.live import ServerProcess
from tests.support.sse import collect

KEY = "e2e-key-abcdefghijklmnopqrstuvwxyz012345"


def test_sessions_and_replay_across_restart(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "home", env={"FAMULUS_API_KEY": KEY}).start()
    auth = {"Authorization": f"Bearer {KEY}"}
    try:
        with httpx.Client(base_url=server.base_url, headers=auth, timeout=10) as http:
            assert http.get("/health").json()["auth"] is True
            sid = http.post("/sessions", json={"name": "one"}).json()["session_id"]
            http.patch(f"/sessions/{sid}", json={"name": "two"})
            http.patch(f"/sessions/{sid}", json={"name": "three"})
            first = collect(http, f"/chat/events/{sid}?after=0", 2)
            assert [e.data["name"] for e in first] == ["two", "three"]
    finally:
        server.stop()

    server.start()
    try:
        with httpx.Client(base_url=server.base_url, headers=auth, timeout=10) as http:
            replay = collect(http, f"/chat/events/{sid}", 1, headers={"Last-Event-ID": "1"})
            assert replay[0].id == 2 and replay[0].data["name"] == "three"
            assert http.get("/session", params={"session_id": sid}).json()["name"] == "three"
    finally:
        server.stop()


def test_first_start_generates_key_printed_once(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FAMULUS_API_KEY"}
    home = tmp_path / "home"
    server = ServerProcess(home)
    server.extra_env = {}
    os.environ.pop("FAMULUS_API_KEY", None)
    server.start()
    try:
        out = server.output()
        keys = re.findall(r"fam_[A-Za-z0-9_\-]{40,}", out)
        assert len(set(keys)) == 1
        key = keys[0]
        # beside the key, a sign-in link for the web client carrying it
        assert f"{server.base_url}/#key={key}" in out
        stored = (home / "api_key.json").read_text()
        assert key not in stored and "hash" in json.loads(stored)
        assert stat.S_IMODE((home / "api_key.json").stat().st_mode) == 0o600
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        ok = httpx.get(f"{server.base_url}/sessions", headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200
    finally:
        server.stop()
    server.start()  # a second start prints no key, only the address (in its log line)
    server.stop()
    assert set(re.findall(r"fam_[A-Za-z0-9_\-]{40,}", server.output())) == {key}
    assert server.output().count(f"#key={key}") == 1
    assert f"running on {server.base_url} " in server.output()
    assert "open it in a browser for the web client" in server.output()

    reset = subprocess.run(
        [sys.executable, "-m", "famulus.cli", "key", "reset"],
        env={**env, "FAMULUS_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    new_key = re.findall(r"fam_[A-Za-z0-9_\-]{40,}", reset.stdout)[0]
    assert new_key != key


def test_version_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "famulus.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "famulus 0.1.0"


def test_open_streams_end_promptly_on_shutdown(tmp_path: Path) -> None:
    """A client holding an event stream must not hold up a restart."""
    import threading
    import time

    server = ServerProcess(tmp_path / "home", env={"FAMULUS_API_KEY": KEY}).start()
    auth = {"Authorization": f"Bearer {KEY}"}
    lines: list[str] = []
    with httpx.Client(base_url=server.base_url, headers=auth, timeout=20) as http:
        sid = http.post("/sessions", json={}).json()["session_id"]

        def listen() -> None:
            try:
                with http.stream("GET", f"/chat/events/{sid}") as r:
                    lines.extend(r.iter_lines())
            except httpx.HTTPError:
                lines.append("<broken>")

        reader = threading.Thread(target=listen)
        reader.start()
        deadline = time.monotonic() + 5
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lines and lines[0] == ": connected"
        t0 = time.monotonic()
        server.stop()
        elapsed = time.monotonic() - t0
        reader.join(timeout=5)
    assert elapsed < 2.0, f"shutdown took {elapsed:.1f} s with a stream open"
    assert "<broken>" not in lines  # the stream ended cleanly, not cut off
