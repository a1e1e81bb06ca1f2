"""Where a provider's or service's key comes from: the secrets file or the environment.

A key the user connected through the API wins over one found in the
environment, because it is the more deliberate choice. Keys never leave this
module except to build a model or call the provider; the API only ever sees
``key_hint``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from famulus.secrets import SecretsStore


def key_hint(key: str | None) -> str | None:
    """A masked hint such as ``sk-…7f3a``: enough to recognise a key, not to use it."""
    if not key:
        return None
    if len(key) >= 12:
        return f"{key[:3]}…{key[-4:]}"
    return f"…{key[-2:]}" if len(key) > 2 else "…"


class Credentials:
    """API keys for providers and services, keyed ``provider:<id>`` / ``service:<id>``."""

    def __init__(self, secrets: SecretsStore, environ: Mapping[str, str] | None = None) -> None:
        self.secrets = secrets
        self._environ = environ

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def env_key(self, env_vars: tuple[str, ...]) -> str | None:
        for name in env_vars:
            value = self.environ.get(name, "").strip()
            if value:
                return value
        return None

    def stored(self, kind: str, ident: str) -> str | None:
        value = self.secrets.get(f"{kind}:{ident}")
        return value if isinstance(value, str) and value else None

    def key(self, kind: str, ident: str, env_vars: tuple[str, ...]) -> str | None:
        return self.stored(kind, ident) or self.env_key(env_vars)

    def store(self, kind: str, ident: str, key: str) -> None:
        self.secrets.set(f"{kind}:{ident}", key)

    def forget(self, kind: str, ident: str) -> bool:
        return self.secrets.delete(f"{kind}:{ident}")
