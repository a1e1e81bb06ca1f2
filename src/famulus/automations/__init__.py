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
    deliveries = container.extras.get("deliveries")
    if deliveries is not None:
        deliveries.listeners.append(service.delivery_changed)
    container.on_start(service.start)
    container.on_stop(service.stop)
    container.on_drain(service.close_listeners)
    # Calendar-triggered automations: started after the service, stopped first.
    from famulus.automations.calendar_watch import CalendarWatcher
    from famulus.store.calendar_fired import CalendarFiredStore

    watcher = CalendarWatcher(container, service, CalendarFiredStore(container.db))
    container.extras["calendar_watcher"] = watcher
    container.on_start(watcher.start)
    container.on_stop(watcher.stop)
    app.include_router(automations_api.router, dependencies=[Depends(require_key)])
