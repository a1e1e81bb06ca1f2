"""Owner-only storage for credentials: provider keys, service tokens, OAuth tokens.

Why a separate file and not SQLite: the database is backed up, copied and
inspected far more freely than a credentials file; keeping secrets in one
small JSON file with mode 0600 makes their exposure easy to reason about.
Writes go to a temporary file that is renamed into place, so a crash never
leaves a half-written file. Values are never logged.

A file that does not parse is never overwritten: it is renamed aside
(``secrets.json.corrupt-<UTC time>``, still owner-only) with a warning that
names the new path but not the content, so a person can recover keys from it
by hand while the server goes on as if no secrets were stored.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class SecretsStore:
    """A JSON object of ``name -> value`` kept in ``settings.secrets_file``.

    Names are namespaced by the caller (``provider:openai``,
    ``service:telegram``, ``oauth:openai-codex``, ``custom:<model_id>``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def check(self) -> None:
        """Read the file once (at start-up), so a corrupt one is set aside and reported now."""
        with self._lock:
            self._load()

    def _load(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            data = None
        if isinstance(data, dict):
            return data
        # A corrupt file must not take the server down, nor be lost to the next write.
        self._set_aside()
        return {}

    def _set_aside(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        os.replace(self.path, target)
        target.chmod(0o600)
        log.warning(
            "%s is not a JSON object of secrets; it was moved to %s (owner-only) and"
            " famulus continues without the secrets it held. Reconnect providers and"
            " services, or repair that file and move it back while the server is stopped.",
            self.path,
            target,
        )

    def _save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".secrets-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        self.path.chmod(0o600)

    def get(self, name: str) -> Any:
        with self._lock:
            return self._load().get(name)

    def set(self, name: str, value: Any) -> None:
        with self._lock:
            data = self._load()
            data[name] = value
            self._save(data)

    def delete(self, name: str) -> bool:
        """Remove ``name``; returns whether it existed."""
        with self._lock:
            data = self._load()
            if name not in data:
                return False
            del data[name]
            self._save(data)
            return True

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._load())
