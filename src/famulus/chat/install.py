"""Installs the chat area: runs, approvals, context and compaction endpoints."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from famulus.api import chat as chat_api
from famulus.api import context as context_api
from famulus.api.deps import require_key
from famulus.chat.context import ContextService
from famulus.chat.manager import RunManager
from famulus.container import Container


def install(app: FastAPI, container: Container) -> None:
    manager = RunManager(container)
    context = ContextService(container, manager.turns, manager.busy)
    manager.turns.compactor = context
    container.extras["chat"] = manager
    container.extras["context"] = context
    container.sessions.before_remove.append(manager.session_removed)
    container.sessions.before_clear.append(manager.session_removed)
    container.on_start(manager.recover)
    container.on_drain(manager.stop)
    container.on_stop(manager.stop)
    app.include_router(chat_api.router, dependencies=[Depends(require_key)])
    app.include_router(context_api.router, dependencies=[Depends(require_key)])
