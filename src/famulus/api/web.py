"""The web client: ``GET /`` and its static files, served without the key.

The files hold no data (everything a person sees comes from the API with the
key), so they are public like ``/health``. Every answer carries a strict
Content-Security-Policy: no inline script or style and nothing from another
origin, so text a model or a web page wrote can never run as code even if a
view mistakenly rendered it as HTML. Only the fixed places below are
served; any other path still gets the API's JSON 404.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

import famulus.web
from famulus.errors import NotFound

STATIC = Path(famulus.web.__file__).resolve().parent / "static"

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; "
        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate every time (the ETag makes that cheap): after an upgrade the
    # browser must never mix an old app.js with a new view module.
    "Cache-Control": "no-cache",
}

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}

router = APIRouter(include_in_schema=False)


def _file(relative: str) -> FileResponse:
    """The static file at ``relative``, never one outside STATIC (``..``,
    symlinks) and only of a known type; anything else is the JSON 404."""
    path = (STATIC / relative).resolve()
    kind = TYPES.get(path.suffix)
    if kind is None or not path.is_relative_to(STATIC) or not path.is_file():
        raise NotFound(f"No such file: /{relative[:64]}")
    return FileResponse(path, media_type=kind, headers=HEADERS)


@router.get("/")
async def index() -> FileResponse:
    return _file("index.html")


@router.get("/app.css")
async def stylesheet() -> FileResponse:
    return _file("app.css")


@router.get("/favicon.ico")
async def icon() -> FileResponse:
    """An SVG under the name browsers ask for by themselves."""
    return _file("icon.svg")


@router.get("/js/{path:path}")
async def script(path: str) -> FileResponse:
    return _file(f"js/{path}")


@router.get("/vendor/{path:path}")
async def vendored(path: str) -> FileResponse:
    return _file(f"vendor/{path}")
