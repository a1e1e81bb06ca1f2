"""Automations: scheduled, interval and event-triggered agent tasks."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from famulus.container import Container


def install(app: FastAPI, container: Container) -> None:
    from famulus.api import automations as automations_api
    from famulus.api.deps import require_key
    from famulus.automations.service import AutomationService
    from famulus.store.automations import AutomationStore

    service = AutomationService(container, AutomationStore(container.db))
    container.extras["automations"] = service
    notifiers = container.extras.get("notifiers")
    if notifiers is not None:
        notifiers.in_use_checks.append(service.store.using_notifier)
    container.on_start(service.start)
    container.on_stop(service.stop)
    app.include_router(automations_api.router, dependencies=[Depends(require_key)])
