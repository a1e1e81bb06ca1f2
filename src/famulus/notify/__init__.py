"""Notifiers: where automation results go (Telegram, e-mail, webhook)."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from famulus.container import Container


def install(app: FastAPI, container: Container) -> None:
    from famulus.api import notifiers as notifiers_api
    from famulus.api.deps import require_key
    from famulus.notify.service import NotifierService
    from famulus.store.notifiers import NotifierStore

    container.extras["notifiers"] = NotifierService(
        container.settings, NotifierStore(container.db), container.extras
    )
    app.include_router(notifiers_api.router, dependencies=[Depends(require_key)])
