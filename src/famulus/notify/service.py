"""Notifier configs and delivery; automations call ``send`` with their results."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from famulus import config_keys
from famulus.errors import Conflict, InvalidRequest, NotConfigured, NotFound
from famulus.notify import apprise_url, senders
from famulus.notify.types import SECRET_FIELDS, validate_config
from famulus.secrets import SecretsStore
from famulus.settings import Settings
from famulus.store.kv import KVStore
from famulus.store.notifiers import NotifierRow, NotifierStore

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class Credentials(Protocol):
    """Where a connected service's stored key is found (``llm.service.LLMService``)."""

    async def service_credential(self, service: str) -> str | None: ...


def _secret_name(notifier: str) -> str:
    return f"notifier:{notifier}"


class NotifierService:
    """Notifier configs live in SQLite, except their secret fields (an apprise
    URL embeds tokens): those go to the secrets file under
    ``notifier:<name>`` and the stored config shows ``<field>_hint`` instead,
    so no API answer ever carries them."""

    def __init__(
        self,
        settings: Settings,
        store: NotifierStore,
        credentials: Credentials,
        secrets: SecretsStore,
        kv: KVStore,
    ) -> None:
        self.settings = settings
        self.store = store
        self.credentials = credentials  # the stored Telegram bot token
        self.secrets = secrets
        self.kv = kv  # the default notifier's name
        # Before a delete: name → the automations that still send to it.
        self.in_use_checks: list[Callable[[str], Awaitable[list[str]]]] = []

    async def create(self, name: str, type_: str, config: dict[str, Any]) -> NotifierRow:
        if not _NAME.match(name):
            raise InvalidRequest(
                "Notifier name must be 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit.",
                loc=["body", "name"],
            )
        clean = validate_config(type_, config)
        row = await self.store.add(name, type_, _shown(type_, clean))
        if row is None:
            raise Conflict(f"A notifier named '{name}' already exists.")
        self._keep_secrets(name, type_, clean)
        return row

    async def get(self, name: str) -> NotifierRow:
        row = await self.store.get(name)
        if row is None:
            raise NotFound(f"No notifier named '{name}'. List them with GET /notifiers/configs.")
        return row

    async def update(
        self, name: str, type_: str | None, config: dict[str, Any] | None
    ) -> NotifierRow:
        """Change a notifier in place; its name, and so the automations that
        use it, stay. Config fields are merged into the current config and the
        result is validated like a new one. A new type takes a whole config of
        that type (the old type's fields mean nothing to it)."""
        row = await self.get(name)
        if type_ is None or type_ == row.type:
            clean = validate_config(row.type, {**self._full_config(row), **(config or {})})
        else:
            clean = validate_config(type_, config or {})
        new_type = type_ or row.type
        self._keep_secrets(name, new_type, clean)  # first: a waiting retry uses the new one
        updated = await self.store.update(name, new_type, _shown(new_type, clean))
        if updated is None:  # deleted meanwhile
            raise NotFound(f"No notifier named '{name}'. List them with GET /notifiers/configs.")
        return updated

    async def all(self) -> list[NotifierRow]:
        return await self.store.all()

    async def delete(self, name: str) -> None:
        await self.get(name)
        for check in self.in_use_checks:
            users = await check(name)
            if users:
                raise Conflict(
                    f"Notifier '{name}' is used by automation(s) {', '.join(users)}; "
                    "remove it from them first."
                )
        await self.store.delete(name)
        self.secrets.delete(_secret_name(name))
        if await self.default_name() == name:
            await self.kv.delete(config_keys.DEFAULT_NOTIFIER)

    async def default_name(self) -> str | None:
        """The person's default notifier (what the agent's schedule tool uses)."""
        value = await self.kv.get(config_keys.DEFAULT_NOTIFIER)
        return value if isinstance(value, str) and value else None

    async def require(self, name: str, field: str) -> None:
        """A 422 at ``["body", field]`` unless a notifier ``name`` exists."""
        if await self.store.get(name) is None:
            known = ", ".join(r.name for r in await self.store.all()) or "none yet"
            raise InvalidRequest(
                f"{field}: no notifier named '{name}' (known: {known});"
                " create one with POST /notifiers/configs.",
                loc=["body", field],
            )

    async def set_default(self, name: str | None) -> None:
        """Make ``name`` the default (it must exist), or clear it with None."""
        if name is None:
            await self.kv.delete(config_keys.DEFAULT_NOTIFIER)
            return
        await self.require(name, "default_notifier")
        await self.kv.set(config_keys.DEFAULT_NOTIFIER, name)

    async def missing(self, names: list[str]) -> list[str]:
        known = {row.name for row in await self.store.all()}
        return [n for n in names if n not in known]

    async def send(self, name: str, title: str, text: str) -> None:
        row = await self.get(name)
        if row.type == "telegram":
            token = await self._telegram_token()
            body = f"{title}\n\n{text}" if _distinct(title, text) else text
            await senders.send_telegram(
                self.settings.telegram_base_url, token, row.config["chat_id"], body
            )
        elif row.type == "email":
            await senders.send_email(self.settings, row.config["to"], title or "famulus", text)
        elif row.type == "apprise":
            url = self._full_config(row).get("url")
            if not isinstance(url, str) or not url:
                raise NotConfigured(
                    f"The apprise URL of notifier '{name}' is missing from the secrets file;"
                    f" set it again with PATCH /notifiers/configs/{name}."
                )
            await apprise_url.send(url, title if _distinct(title, text) else "", text)
        else:
            payload = {"notifier": name, "title": title, "text": text}
            await senders.send_webhook(row.config["url"], payload)

    async def test(self, name: str) -> None:
        await self.send(name, "famulus test", "This is a test message from famulus.")

    async def _telegram_token(self) -> str | None:
        return await self.credentials.service_credential("telegram")

    def _keep_secrets(self, name: str, type_: str, clean: dict[str, Any]) -> None:
        """Store the secret fields of ``clean``; forget them when the type has none."""
        fields = SECRET_FIELDS.get(type_, ())
        if fields:
            self.secrets.set(_secret_name(name), {f: clean[f] for f in fields})
        else:
            self.secrets.delete(_secret_name(name))

    def _full_config(self, row: NotifierRow) -> dict[str, Any]:
        """The config with its secret fields back in place of their hints."""
        fields = SECRET_FIELDS.get(row.type, ())
        if not fields:
            return dict(row.config)
        hints = {f"{f}_hint" for f in fields}
        stored = self.secrets.get(_secret_name(row.name))
        secret = {f: stored[f] for f in fields if isinstance(stored, dict) and f in stored}
        return {**{k: v for k, v in row.config.items() if k not in hints}, **secret}


def _distinct(title: str, text: str) -> bool:
    """Whether the title adds anything: a reminder's name is its text, and a
    chat-style channel would show it twice."""
    return bool(title) and title.strip() != text.strip()


def _shown(type_: str, clean: dict[str, Any]) -> dict[str, Any]:
    """What is kept in the database and shown: secret fields become hints."""
    fields = SECRET_FIELDS.get(type_, ())
    shown = {k: v for k, v in clean.items() if k not in fields}
    for f in fields:
        shown[f"{f}_hint"] = apprise_url.hint(str(clean[f]))
    return shown
