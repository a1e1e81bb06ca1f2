"""create_app(settings): the HTTP application around the services ``wiring.py`` builds.

The lifespan starts and stops the services; the routes come from one table
(``api/routes.py``); the middlewares bound bodies before anything parses them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.middleware.cors import CORSMiddleware

from famulus import __version__
from famulus.api import mcp, routes
from famulus.api.deps import require_key
from famulus.api.depth import JsonDepthMiddleware
from famulus.api.errors import install_error_handlers
from famulus.api.limits import BodyLimitMiddleware
from famulus.api.openai_errors import OpenAIErrorShape
from famulus.api.openapi import describe_errors
from famulus.settings import Settings
from famulus.wiring import build_container


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
    app.add_middleware(JsonDepthMiddleware)  # inside the size limit, before any parsing
    app.add_middleware(
        BodyLimitMiddleware,
        default_limit=settings.max_body_bytes,
        overrides={
            "/chat/message": settings.max_chat_body_bytes,
            "/facts/import": settings.max_chat_body_bytes,
            "/v1/chat/completions": settings.max_chat_body_bytes,
        },
    )
    app.add_middleware(OpenAIErrorShape)  # outside the limits: their errors too
    _add_cors(app, settings.cors_origin_list)
    app.include_router(routes.table())
    mcp.mount(app, container)
    _add_openapi_route(app)
    return app


def _add_cors(app: FastAPI, origins: list[str]) -> None:
    """Opt-in (``FAMULUS_CORS_ORIGINS``): a page on another origin, such as Open
    WebUI in a browser, may call the API with the key. No cookies are used, so
    credentials stay off; outermost, so error answers carry the headers too."""
    if not origins:
        return
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        # Any request header: browser OpenAI SDKs add their own (x-stainless-*),
        # and with a bearer key and no cookies a header grants nothing.
        allow_headers=["*"],
        expose_headers=["X-Famulus-Session", "X-Famulus-Run", "Retry-After"],
        max_age=600,
    )


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
    app.add_api_route(
        "/openapi.json",
        _openapi,
        methods=["GET"],
        include_in_schema=False,
        dependencies=[Depends(require_key)],
    )


async def _openapi(request: Request) -> JSONResponse:
    """One function for every app, reaching its app through the request: FastAPI
    keeps the endpoints it has inspected in a process-wide cache, and a closure
    over the app there would keep each app (and all its services) alive."""
    return JSONResponse(request.app.openapi())
