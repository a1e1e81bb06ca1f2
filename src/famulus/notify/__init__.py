"""Notifiers: where automation results go (Telegram, e-mail, webhook)."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from famulus.container import Container


def install(app: FastAPI, container: Container) -> None:
    from famulus.api import notifiers as notifiers_api
    from famulus.api.deps import require_key
    from famulus.notify.delivery import DeliveryQueue, policy_from
    from famulus.notify.service import NotifierService
    from famulus.store.deliveries import DeliveryStore
    from famulus.store.notifiers import NotifierStore

    settings = container.settings
    service = NotifierService(settings, NotifierStore(container.db), container.extras)
    container.extras["notifiers"] = service
    policy = policy_from(settings.notify_retry_delays_s, settings.notify_retry_after_max_s)
    queue = DeliveryQueue(DeliveryStore(container.db), service.send, policy)
    container.extras["deliveries"] = queue
    container.on_start(queue.start)
    container.on_stop(queue.stop)
    app.include_router(notifiers_api.router, dependencies=[Depends(require_key)])
