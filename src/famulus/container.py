"""The service container: every long-lived service, built once per app.

Routers reach services through ``request.app.state.container``; background
services register start/stop callbacks here so the lifespan runs them in order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from famulus.auth import FailureThrottle, KeyVerifier
from famulus.directives import DirectivesService
from famulus.events import EventHub
from famulus.sessions.service import SessionService
from famulus.settings import Settings
from famulus.store.db import Database
from famulus.store.events import EventStore
from famulus.store.kv import KVStore
from famulus.store.sessions import SessionStore

log = logging.getLogger(__name__)

Hook = Callable[[], Awaitable[None]]
# Gives the agent toolsets an area offers right now (none when, say, the
# integration behind them is not connected).
ToolsetProvider = Callable[[], Awaitable[list[Any]]]


@dataclass
class Container:
    settings: Settings
    db: Database
    kv: KVStore
    events: EventHub
    sessions: SessionService
    directives: DirectivesService
    verifier: KeyVerifier
    throttle: FailureThrottle
    # Later areas attach their services here (llm, chat runs, memory ...).
    extras: dict[str, Any] = field(default_factory=dict)
    _on_start: list[Hook] = field(default_factory=list)
    _on_stop: list[Hook] = field(default_factory=list)
    _on_drain: list[Hook] = field(default_factory=list)
    _toolset_providers: list[ToolsetProvider] = field(default_factory=list)

    def register_toolsets(self, provider: ToolsetProvider) -> None:
        self._toolset_providers.append(provider)

    async def agent_toolsets(self) -> list[Any]:
        """Every area's current toolsets; one failing area never stops a chat."""
        found: list[Any] = []
        for provider in self._toolset_providers:
            try:
                found.extend(await provider())
            except Exception:
                log.exception("an area failed to provide its agent tools")
        return found

    def on_start(self, hook: Hook) -> None:
        self._on_start.append(hook)

    def on_stop(self, hook: Hook) -> None:
        self._on_stop.append(hook)

    def on_drain(self, hook: Hook) -> None:
        """Run ``hook`` as soon as the server begins to shut down (before it waits for
        open connections), so work in flight is recorded while everything is up."""
        self._on_drain.append(hook)

    async def drain(self) -> None:
        for hook in self._on_drain:
            try:
                await hook()
            except Exception:
                log.exception("error while draining a service")

    async def start(self) -> None:
        for hook in self._on_start:
            await hook()

    async def stop(self) -> None:
        for hook in reversed(self._on_stop):
            try:
                await hook()
            except Exception:  # stopping must go on for the rest
                log.exception("error while stopping a service")
        self.db.close()


def build_container(settings: Settings) -> Container:
    settings.ensure_home()
    db = Database(settings.db_path)
    db.open()
    kv = KVStore(db)
    events = EventHub(EventStore(db))
    env_key = settings.api_key.get_secret_value() if settings.api_key else None
    return Container(
        settings=settings,
        db=db,
        kv=kv,
        events=events,
        sessions=SessionService(SessionStore(db), events),
        directives=DirectivesService(kv),
        verifier=KeyVerifier(settings.key_file, env_key),
        throttle=FailureThrottle(settings.auth_max_failures, settings.auth_failure_window_s),
    )
