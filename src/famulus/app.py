"""create_app(settings): wiring. The lifespan opens storage and starts services."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse

from famulus import __version__
from famulus.api import directives, health, sessions, sse
from famulus.api.bodyless import BodylessMiddleware
from famulus.api.deps import require_key
from famulus.api.depth import JsonDepthMiddleware
from famulus.api.errors import install_error_handlers
from famulus.api.limits import BodyLimitMiddleware
from famulus.api.openapi import describe_errors
from famulus.container import Container, build_container
from famulus.settings import Settings

# Routers that need the API key; /health is public.
_PROTECTED = [sessions.router, directives.router, sse.router]


def _extend(app: FastAPI, container: Container) -> None:
    """Attach the feature areas; each registers its routers and services."""
    from famulus import features

    features.install(app, container)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    container = build_container(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await container.start()
        try:
            yield
        finally:
            await container.stop()

    app = FastAPI(
        title="famulus",
        version=__version__,
        summary="A self-hosted personal AI agent server.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.container = container
    install_error_handlers(app)
    app.add_middleware(BodylessMiddleware, openapi=app.openapi)
    app.add_middleware(JsonDepthMiddleware)  # inside the size limit, before any parsing
    app.add_middleware(
        BodyLimitMiddleware,
        default_limit=settings.max_body_bytes,
        overrides={
            "/chat/message": settings.max_chat_body_bytes,
            "/facts/import": settings.max_chat_body_bytes,
        },
    )
    app.include_router(health.router)
    for router in _PROTECTED:
        app.include_router(router, dependencies=[Depends(require_key)])
    _extend(app, container)
    # After every area's drain hook, so their last events still reach clients.
    container.on_drain(container.events.close_all)
    _add_openapi_route(app)
    return app


def _add_openapi_route(app: FastAPI) -> None:
    """/openapi.json needs the key like every endpoint but /health; the document
    describes the error body the server really sends (``api/openapi.py``)."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = describe_errors(
                get_openapi(
                    title=app.title, version=app.version, summary=app.summary, routes=app.routes
                )
            )
        return app.openapi_schema

    app.openapi = build  # type: ignore[method-assign]

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_key)])
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())
