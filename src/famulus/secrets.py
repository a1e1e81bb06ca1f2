"""Owner-only storage for credentials: provider keys, service tokens, OAuth tokens.

Why a separate file and not SQLite: the database is backed up, copied and
inspected far more freely than a credentials file; keeping secrets in one
small JSON file with mode 0600 makes their exposure easy to reason about.
Writes go to a temporary file that is renamed into place, so a crash never
leaves a half-written file. Values are never logged.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any


class SecretsStore:
    """A JSON object of ``name -> value`` kept in ``settings.secrets_file``.

    Names are namespaced by the caller (``provider:openai``,
    ``service:telegram``, ``oauth:openai-codex``, ``custom:<model_id>``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            # A corrupt file must not take the server down; it is treated as
            # empty and replaced by the next write.
            return {}
        return data if isinstance(data, dict) else {}

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
