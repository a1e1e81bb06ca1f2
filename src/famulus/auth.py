"""The API key: generation, salted-hash storage, verification, throttling.

The key file holds only ``{"salt", "hash", "n", "r", "p"}`` (scrypt), mode 0600.
A verified token is remembered as its SHA-256 for the life of the file, so the
deliberately slow scrypt runs once per key, not once per request. The file's
mtime is checked on every request so ``famulus key reset`` takes effect at once
in a running server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from collections import defaultdict, deque
from pathlib import Path

from famulus.errors import RateLimited

_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def generate_key() -> str:
    """A new key with 256 bits of entropy."""
    return "fam_" + secrets.token_urlsafe(32)


def _scrypt(key: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(key.encode(), salt=salt, n=n, r=r, p=p, dklen=32)


def write_key_file(path: Path, key: str) -> None:
    """Store only a salted hash of ``key``; atomically, owner-only."""
    salt = secrets.token_bytes(16)
    record = {"salt": salt.hex(), "hash": _scrypt(key, salt, **_SCRYPT).hex(), **_SCRYPT}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


class KeyVerifier:
    """Checks bearer tokens against the env key or the stored hash."""

    def __init__(self, key_file: Path, env_key: str | None) -> None:
        self.key_file = key_file
        self.env_key = env_key
        self._mtime: float | None = None
        self._record: dict[str, object] | None = None
        self._verified: bytes | None = None

    def _load(self) -> None:
        try:
            mtime = self.key_file.stat().st_mtime_ns
        except FileNotFoundError:
            self._record, self._verified, self._mtime = None, None, None
            return
        if mtime != self._mtime:
            self._record = json.loads(self.key_file.read_text())
            self._verified = None
            self._mtime = mtime

    def verify(self, token: str) -> bool:
        if self.env_key is not None:
            return hmac.compare_digest(token.encode(), self.env_key.encode())
        self._load()
        if self._record is None:
            return False
        digest = hashlib.sha256(token.encode()).digest()
        if self._verified is not None:
            return hmac.compare_digest(digest, self._verified)
        rec = self._record
        n, r, p = (int(str(rec[k])) for k in ("n", "r", "p"))
        computed = _scrypt(token, bytes.fromhex(str(rec["salt"])), n, r, p)
        ok = hmac.compare_digest(computed, bytes.fromhex(str(rec["hash"])))
        if ok:
            self._verified = digest
        return ok


class FailureThrottle:
    """Sliding-window count of failed authentications per client address."""

    def __init__(self, max_failures: int, window_s: float) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def _prune(self, client: str, now: float) -> deque[float]:
        q = self._failures[client]
        while q and now - q[0] > self.window_s:
            q.popleft()
        return q

    def check(self, client: str) -> None:
        """Raise RateLimited while ``client`` has too many recent failures."""
        now = time.monotonic()
        q = self._prune(client, now)
        if len(q) >= self.max_failures:
            retry = max(1, int(self.window_s - (now - q[0])) + 1)
            raise RateLimited(
                f"Too many failed authentication attempts; try again in {retry} s.", retry
            )
        if not q:
            self._failures.pop(client, None)

    def blocked(self, client: str) -> bool:
        return len(self._prune(client, time.monotonic())) >= self.max_failures

    def clear(self, client: str) -> None:
        self._failures.pop(client, None)

    def record_failure(self, client: str) -> None:
        self._failures[client].append(time.monotonic())
