"""The extension points every area plugs into, declared in one place.

An area (memory, skills, web, chat, automations, and later channels) never
calls another area's start-up code, never asks for another area's tools by
name, and never learns which areas care about a session being removed. It
registers here instead, and the owner of the moment (the app's lifespan, the
agent factory, ``SessionService``) runs whatever is registered:

- ``on_start`` / ``on_stop`` / ``on_drain``: lifecycle, in registration order
  (stop in reverse, so a service stops before what it depends on);
- ``toolsets``: providers asked on every run for the agent tools an area
  offers right now (none while, say, its integration is not connected);
- ``before_remove`` / ``before_clear``: called with a session id before that
  session is deleted for good or its history cleared (e.g. to cancel its run);
- ``after_branch``: called with the id of a session just created as a branch
  of another, whose history is a copy (e.g. so memory does not read the copied
  messages as new).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

Hook = Callable[[], Awaitable[None]]
ToolsetProvider = Callable[[], Awaitable[list[Any]]]
SessionHook = Callable[[str], Awaitable[None]]


@dataclass
class Hooks:
    _on_start: list[Hook] = field(default_factory=list)
    _on_stop: list[Hook] = field(default_factory=list)
    _on_drain: list[Hook] = field(default_factory=list)
    _toolsets: list[ToolsetProvider] = field(default_factory=list)
    before_remove: list[SessionHook] = field(default_factory=list)
    before_clear: list[SessionHook] = field(default_factory=list)
    after_branch: list[SessionHook] = field(default_factory=list)

    def on_start(self, hook: Hook) -> None:
        self._on_start.append(hook)

    def on_stop(self, hook: Hook) -> None:
        self._on_stop.append(hook)

    def on_drain(self, hook: Hook) -> None:
        """Run ``hook`` as soon as the server begins to shut down (before it waits for
        open connections), so work in flight is recorded while everything is up."""
        self._on_drain.append(hook)

    def toolsets(self, provider: ToolsetProvider) -> None:
        self._toolsets.append(provider)

    async def agent_toolsets(self) -> list[Any]:
        """Every area's current toolsets; one failing area never stops a chat."""
        found: list[Any] = []
        for provider in self._toolsets:
            try:
                found.extend(await provider())
            except Exception:
                log.exception("an area failed to provide its agent tools")
        return found

    async def start(self) -> None:
        for hook in self._on_start:
            await hook()

    async def drain(self) -> None:
        for hook in self._on_drain:
            try:
                await hook()
            except Exception:
                log.exception("error while draining a service")

    async def stop(self) -> None:
        for hook in reversed(self._on_stop):
            try:
                await hook()
            except Exception:  # stopping must go on for the rest
                log.exception("error while stopping a service")
