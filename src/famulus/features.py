"""Feature areas beyond the core (llm, chat runs, memory ...).

Each area exposes ``install(app, container)`` that includes its routers (with
the API-key dependency) and registers its services and start/stop hooks.
Keeping the list here keeps ``app.py`` stable as areas are added.
"""

from __future__ import annotations

import importlib

from fastapi import FastAPI

from famulus.container import Container

# Module paths of area installers, in start-up order.
AREAS: list[str] = [
    "famulus.llm.install",
    "famulus.memory.install",
    "famulus.skills",
    "famulus.notify",
    "famulus.integrations.web_tools",
    "famulus.integrations.calendar_tools",
    "famulus.integrations.mail_tools",
    "famulus.chat.install",
    "famulus.automations",
]


def install(app: FastAPI, container: Container) -> None:
    for path in AREAS:
        module = importlib.import_module(path)
        module.install(app, container)
