"""The route table: every router famulus serves, and which need the API key.

``app.py`` includes ``public`` as it is and ``protected`` behind
``deps.require_key`` (which authenticates first, then refuses a body sent to
an endpoint that takes none). To add endpoints, write a router module in
``api/`` that calls services from ``deps.container`` and list it here.
The order is the order of the OpenAPI document.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from famulus.api import (
    automations,
    channels,
    chat,
    config,
    context,
    directives,
    embedding,
    health,
    mcp_servers,
    memory_admin,
    memory_conversations,
    memory_facts,
    memory_learning,
    memory_profile,
    notifiers,
    openai_compat,
    providers,
    services,
    sessions,
    skills,
    sse,
    usage,
    web,
)
from famulus.api.deps import require_key

PUBLIC: list[APIRouter] = [health.router, web.router]

PROTECTED: list[APIRouter] = [
    sessions.router,
    directives.router,
    sse.router,
    providers.router,
    config.router,
    services.router,
    memory_facts.router,
    memory_profile.router,
    memory_learning.router,
    memory_admin.router,
    memory_conversations.router,
    embedding.router,
    skills.router,
    notifiers.router,
    chat.router,
    context.router,
    automations.router,
    mcp_servers.router,
    openai_compat.router,
    channels.router,
    usage.router,
]


def table() -> APIRouter:
    """One router holding the whole table, the protected part behind the key."""
    root = APIRouter()
    for router in PUBLIC:
        root.include_router(router)
    for router in PROTECTED:
        root.include_router(router, dependencies=[Depends(require_key)])
    return root
