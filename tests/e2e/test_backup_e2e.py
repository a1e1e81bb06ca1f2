"""``famulus backup`` while a real server writes, ``famulus restore`` into a new
home, and a server started there finds everything: sessions, a remembered fact,
a connected service's secret, the API key and a global skill."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx
from tests.support.fake_http import recording_server, telegram_route
from tests.support.live import ServerProcess

from famulus.auth import write_key_file

KEY = "fam_backup-e2e-key-0123456789abcdefghijklmnop"
BOT_TOKEN = "123456:backup-telegram-token-AbCd"
SKILL = "---\nname: note-taker\ndescription: Keeps notes for the backup test.\n---\nTake notes.\n"


def _famulus(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FAMULUS_API_KEY"}
    env["FAMULUS_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "famulus.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _server(home: Path, telegram_url: str) -> ServerProcess:
    """A server that knows only the key file in its home (no FAMULUS_API_KEY)."""
    os.environ.pop("FAMULUS_API_KEY", None)
    return ServerProcess(home, env={"FAMULUS_TELEGRAM_BASE_URL": telegram_url})


def _write_while_serving(http: httpx.Client) -> tuple[str, str]:
    sid = http.post("/sessions", json={"name": "kept across machines"}).json()["session_id"]
    fact = http.post("/facts", json={"text": "The owner's cat is called Miso."})
    assert fact.status_code == 201, fact.text
    r = http.post("/services/telegram/connect", json={"api_key": BOT_TOKEN})
    assert r.status_code == 200, r.text
    return sid, fact.json()["fact"]["id"]


def test_backup_of_a_running_server_restores_on_a_new_home(tmp_path: Path) -> None:
    home, new_home = tmp_path / "home", tmp_path / "elsewhere" / "home"
    home.mkdir(mode=0o700)
    write_key_file(home / "api_key.json", KEY)
    (home / "skills" / "note-taker").mkdir(parents=True)
    (home / "skills" / "note-taker" / "SKILL.md").write_text(SKILL)
    auth = {"Authorization": f"Bearer {KEY}"}
    with recording_server(telegram_route(BOT_TOKEN)) as telegram:
        server = _server(home, telegram.url).start()
        try:
            with httpx.Client(base_url=server.base_url, headers=auth, timeout=30) as http:
                sid, fact_id = _write_while_serving(http)
                done = _famulus(home, "backup", str(tmp_path))  # the server still runs
                assert done.returncode == 0, done.stderr
                # the server goes on writing after the copy; the archive is a snapshot
                http.post("/sessions", json={"name": "after the backup"})
        finally:
            server.stop()
        archives = list(tmp_path.glob("famulus-backup-*.tar.gz"))
        assert len(archives) == 1 and str(archives[0]) in done.stdout
        assert stat.S_IMODE(archives[0].stat().st_mode) == 0o600
        with tarfile.open(archives[0]) as tar:
            assert tar.getmember("secrets.json").mode & 0o077 == 0

        restored = _famulus(new_home, "restore", str(archives[0]))
        assert restored.returncode == 0, restored.stderr
        assert stat.S_IMODE(new_home.stat().st_mode) == 0o700
        assert stat.S_IMODE((new_home / "secrets.json").stat().st_mode) == 0o600
        assert stat.S_IMODE((new_home / "famulus.db").stat().st_mode) == 0o600

        server = _server(new_home, telegram.url).start()
        try:
            with httpx.Client(base_url=server.base_url, headers=auth, timeout=30) as http:
                names = [s["name"] for s in http.get("/sessions").json()["sessions"]]
                assert "kept across machines" in names and "after the backup" not in names
                assert http.get(f"/facts/{fact_id}").json()["fact"]["text"].endswith("Miso.")
                services = {s["id"]: s for s in http.get("/services").json()["services"]}
                assert services["telegram"]["connected"] is True
                skills = {s["name"]: s for s in http.get("/skills").json()["skills"]}
                assert skills["note-taker"]["location"] == "global"
                history = http.get("/session/history", params={"session_id": sid})
                assert history.status_code == 200
        finally:
            server.stop()


def test_restore_refuses_a_home_a_server_holds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = ServerProcess(home, env={"FAMULUS_API_KEY": KEY}).start()
    try:
        done = _famulus(home, "backup", str(tmp_path / "b.tar.gz"))
        assert done.returncode == 0, done.stderr
        refused = _famulus(home, "restore", "--force", str(tmp_path / "b.tar.gz"))
        assert refused.returncode == 1
        assert "in use by a famulus server" in refused.stderr and "stop it first" in refused.stderr
    finally:
        server.stop()
