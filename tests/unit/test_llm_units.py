"""Small pure pieces of the llm area: hints, identifiers, secrets file, PKCE, redaction."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from famulus.llm.credentials import key_hint
from famulus.llm.oauth import _account_id, pkce_pair
from famulus.llm.redact import redact
from famulus.llm.service import split_ref
from famulus.secrets import SecretsStore


def test_key_hint() -> None:
    assert key_hint("sk-proj-abcdefghijklmnop7f3a") == "sk-…7f3a"
    assert key_hint("abcdefghijkl") == "abc…ijkl"
    assert key_hint("short") == "…rt"
    assert key_hint("ab") == "…"
    assert key_hint(None) is None and key_hint("") is None


def test_split_ref() -> None:
    assert split_ref("openai:gpt-4.1") == ("openai", "gpt-4.1")
    assert split_ref("custom:llama3:8b") == ("custom", "llama3:8b")
    assert split_ref("llama3:8b") == (None, "llama3:8b")
    assert split_ref("gpt-4.1") == (None, "gpt-4.1")
    assert split_ref("openai-codex:gpt-5") == ("openai-codex", "gpt-5")
    assert split_ref("openai:") == (None, "openai:")


def test_secrets_file_is_owner_only_and_atomic(tmp_path: Path) -> None:
    path = tmp_path / "home" / "secrets.json"
    store = SecretsStore(path)
    assert store.get("x") is None and not store.delete("x")
    store.set("provider:openai", "sk-1")
    store.set("oauth:openai-codex", {"access_token": "a"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.get("provider:openai") == "sk-1"
    assert store.names() == ["oauth:openai-codex", "provider:openai"]
    assert store.delete("provider:openai") and store.get("provider:openai") is None
    assert [p.name for p in path.parent.iterdir()] == ["secrets.json"]  # no temp files left


def test_secrets_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    store = SecretsStore(tmp_path / "secrets.json")
    threads = [threading.Thread(target=store.set, args=(f"k{i}", i)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.names()) == 20


def test_corrupt_secrets_file_is_set_aside_not_overwritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "secrets.json"
    garbage = '{"provider:openai": "sk-precious-0000", oops'
    path.write_text(garbage)
    os.chmod(path, 0o644)
    store = SecretsStore(path)
    assert store.get("a") is None
    store.set("a", "b")
    assert store.get("a") == "b" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"a": "b"}
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("secrets.json.corrupt-")]
    assert len(aside) == 1
    assert aside[0].read_text() == garbage
    assert stat.S_IMODE(aside[0].stat().st_mode) == 0o600
    assert aside[0].name in caplog.text and "sk-precious" not in caplog.text


@pytest.mark.parametrize("content", [b"[1, 2]", b'"a string"', b"\xff\xfe{}"])
def test_non_object_or_undecodable_secrets_are_set_aside(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "secrets.json"
    path.write_bytes(content)
    store = SecretsStore(path)
    assert store.names() == []
    path.write_bytes(content)  # a second corrupt file in the same second gets its own name
    store.check()
    aside = sorted(p for p in tmp_path.iterdir() if ".corrupt-" in p.name)
    assert len(aside) == 2 and all(p.read_bytes() == content for p in aside)
    assert not path.exists()


def test_pkce_pair_is_s256() -> None:
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert pkce_pair()[0] != verifier


def test_account_id_from_id_token() -> None:
    payload = base64.urlsafe_b64encode(
        b'{"https://api.openai.com/auth": {"chatgpt_account_id": "acct-9"}}'
    ).rstrip(b"=")
    assert _account_id(f"e30.{payload.decode()}.sig") == "acct-9"
    assert _account_id("not-a-jwt") is None and _account_id(None) is None


def test_redact_masks_url_secrets() -> None:
    line = 'HTTP Request: GET https://api.telegram.org/bot123:ABC/getMe "HTTP/1.1 200 OK"'
    assert "123:ABC" not in redact(line) and "/bot[redacted]/getMe" in redact(line)
    assert redact("GET https://g.example/v1beta/models?key=AIzaXYZ&x=1") == (
        "GET https://g.example/v1beta/models?key=[redacted]&x=1"
    )


@pytest.mark.parametrize(
    "provider", ["openai", "openrouter", "custom", "anthropic", "openai-codex"]
)
def test_sdk_clients_do_not_retry_on_their_own(provider: str) -> None:
    """RetryingModel is the one retry layer; an SDK retrying too would multiply the tries."""
    from famulus.llm.builder import build_model

    model: Any = build_model(provider, "m", api_key="k", base_url="http://127.0.0.1:9/v1")
    assert model.client.max_retries == 0
