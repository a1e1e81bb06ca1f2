"""``famulus doctor`` as a person runs it, against temp homes: a healthy one is
all ``ok``; loose permissions, a refused key and a corrupt database each fail
with the fix; a running server's home is checked without disturbing it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from tests.support.fake_http import Recorder, recording_server
from tests.support.live import ServerProcess, free_port
from tests.support.sandbox import require_bwrap

from famulus.auth import write_key_file
from famulus.store.db import Database
from famulus.store.llm import CustomModelStore

OPENAI_KEY = "sk-doctor-good-0123456789abcdef"
BOT_TOKEN = "123456:doctor-telegram-token-AbCd"
KEY = "fam_doctor-key-0123456789abcdefghijklmnopqrstu"
_CREDENTIAL_VARS = ("API_KEY", "BOT_TOKEN", "FAMULUS_")


def _route(method: str, path: str, body: Any) -> tuple[int, Any]:
    """An OpenAI model list and a Telegram getMe, each for one good key."""
    if path == "/v1/models":  # OpenAI's, and a custom endpoint's serving llama3
        return 200, {"data": [{"id": "gpt-4.1"}, {"id": "gpt-4.1-mini"}, {"id": "llama3"}]}
    if path == f"/bot{BOT_TOKEN}/getMe":
        return 200, {"ok": True, "result": {"id": 1, "is_bot": True}}
    return 401, {"ok": False, "description": "Unauthorized"}


def _home(root: Path, secrets: dict[str, str], custom: dict[str, str] | None = None) -> Path:
    """A home as a server leaves it; ``custom`` maps custom model ids to base URLs."""
    home = root / "home"
    home.mkdir(mode=0o700)
    db = Database(home / "famulus.db")
    db.open()
    for model_id, base_url in (custom or {}).items():
        add = CustomModelStore(db).add(model_id, base_url, 8192, 1024, False)
        assert asyncio.run(add)
    db.close()
    write_key_file(home / "api_key.json", KEY)
    (home / "secrets.json").write_text(json.dumps(secrets))
    (home / "secrets.json").chmod(0o600)
    return home


def _doctor(home: Path, fake: Recorder) -> tuple[int, dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not any(s in k for s in _CREDENTIAL_VARS)}
    env |= {
        "FAMULUS_HOME": str(home),
        "FAMULUS_OPENAI_BASE_URL": f"{fake.url}/v1",
        "FAMULUS_TELEGRAM_BASE_URL": fake.url,
    }
    done = subprocess.run(
        [sys.executable, "-m", "famulus.cli", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert "\x1b[" not in done.stdout  # no colour codes when not on a terminal
    by_name = {line[5:25].strip(): line for line in lines}
    assert len(by_name) == len(lines), done.stdout
    return done.returncode, by_name


def test_a_healthy_home_is_all_ok(tmp_path: Path) -> None:
    require_bwrap()
    secrets = {"provider:openai": OPENAI_KEY, "service:telegram": BOT_TOKEN}
    with recording_server(_route) as fake:
        home = _home(tmp_path, secrets, {"llama3": f"{fake.url}/v1"})
        code, lines = _doctor(home, fake)
        asked = [path for _, path, _ in fake.requests]
    assert code == 0, lines
    expected = {"home", "permissions", "database", "migrations", "api key", "server"}
    expected |= {"provider openai", "service telegram", "embedding checksum", "embedding model"}
    expected |= {"sandbox", "disk", "custom llama3"}
    assert set(lines) == expected, lines
    assert all(line.startswith("ok   ") for line in lines.values()), lines
    assert "(3 models listed)" in lines["provider openai"]
    assert sorted(asked) == sorted(["/v1/models", "/v1/models", f"/bot{BOT_TOKEN}/getMe"])


def test_loose_permissions_and_a_refused_key_fail_with_the_fix(tmp_path: Path) -> None:
    gone = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with recording_server(_route) as fake:
        custom = {"llama3": gone, "mistral": f"{fake.url}/v1"}
        home = _home(tmp_path, {"service:telegram": "123456:revoked-token-XyZw"}, custom)
        home.chmod(0o755)
        (home / "secrets.json").chmod(0o644)
        code, lines = _doctor(home, fake)
    assert code == 1
    assert lines["home"].startswith("fail") and f"fix: chmod 700 {home}" in lines["home"]
    assert f"fix: chmod 600 {home / 'secrets.json'}" in lines["permissions"]
    telegram = lines["service telegram"]
    assert telegram.startswith("fail") and "Unauthorized" in telegram and "fix: connect" in telegram
    assert "revoked" not in telegram  # the key itself is never printed
    assert lines["custom llama3"].startswith("fail") and "does not answer" in lines["custom llama3"]
    assert lines["custom mistral"].startswith("warn") and "does not list" in lines["custom mistral"]
    assert lines["database"].startswith("ok")


def test_a_corrupt_database_fails(tmp_path: Path) -> None:
    home = _home(tmp_path, {})
    db = home / "famulus.db"
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 8 * page
    data[2 * page : len(data) - page] = b"\x5a" * (len(data) - 3 * page)  # all but two pages
    db.write_bytes(bytes(data))
    with recording_server(_route) as fake:
        code, lines = _doctor(home, fake)
    assert code == 1
    assert lines["database"].startswith("fail") and "famulus restore" in lines["database"]

    db.write_bytes(b"not a database at all" * 500)
    with recording_server(_route) as fake:
        code, lines = _doctor(home, fake)
    assert code == 1 and "cannot be read" in lines["database"]


def test_doctor_checks_a_running_servers_home_read_only(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "home", env={"FAMULUS_API_KEY": KEY}).start()
    try:
        with recording_server(_route) as fake:
            code, lines = _doctor(tmp_path / "home", fake)
        assert lines["database"].startswith("ok") and lines["migrations"].startswith("ok")
        assert f"running (PID {server.proc.pid if server.proc else 0}" in lines["server"]
        health = httpx.get(f"{server.base_url}/health", timeout=10)
        assert health.status_code == 200
    finally:
        server.stop()
