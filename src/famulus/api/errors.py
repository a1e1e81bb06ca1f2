"""Every error leaves as ``{"detail", "code"}`` (422s add ``errors``).

Handlers cover our domain errors, Starlette's routing errors (404, 405),
validation errors, malformed JSON, and anything unexpected (a 500 whose body
never carries a stack trace or a secret).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from famulus.agent.failures import describe
from famulus.errors import FamulusError, RateLimited

log = logging.getLogger("famulus.api")

_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "invalid_request",
    422: "invalid_request",
    429: "rate_limited",
    502: "upstream_error",
    503: "not_configured",
}


def error_response(
    status: int,
    detail: str,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {"detail": detail, "code": code or _CODES.get(status, "internal"), **extra}
    return JSONResponse(body, status_code=status, headers=headers)


def _loc(loc: tuple[Any, ...] | list[Any]) -> list[Any]:
    return [p for p in loc]


def _body_unparsed(errors: Any) -> bool:
    """FastAPI leaves a non-JSON body as raw bytes; the model then rejects it whole."""
    return any(list(e.get("loc", ())) == ["body"] and e.get("type") != "missing" for e in errors)


def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "The request body is not valid JSON.", "invalid_request")
    content_type = request.headers.get("content-type", "")
    if "json" not in content_type.lower() and _body_unparsed(errors):
        sent = content_type.split(";")[0] or "no Content-Type"
        return error_response(
            415,
            f"The body was sent with {sent}; send it as JSON with "
            "'Content-Type: application/json'.",
            "invalid_request",
        )
    items = [{"loc": _loc(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in errors]
    first = items[0] if items else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
    detail = f"Invalid request: {where}: {first['msg']}."
    return error_response(422, detail, "invalid_request", errors=items)


# "field: what is wrong" — the form most service-level checks use.
_FIELD_PREFIX = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)(?:: | must | may )")


def _domain_errors(exc: FamulusError) -> list[dict[str, Any]]:
    """A service's 422 carries ``errors`` like a schema 422, so clients need one parser."""
    loc = getattr(exc, "loc", None)
    if loc is None:
        match = _FIELD_PREFIX.match(exc.detail)
        loc = ["body", *match.group(1).split(".")] if match else ["body"]
    return [{"loc": list(loc), "msg": exc.detail}]


def _domain(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, FamulusError)
    return domain_response(exc)


def domain_response(exc: FamulusError) -> JSONResponse:
    """The response for one of our errors (also used by middleware, outside routing)."""
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
    if exc.status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    if exc.status >= 500 and exc.code == "internal":
        log.error("internal error: %s", exc.detail)
    extra = {"errors": _domain_errors(exc)} if exc.status == 422 else {}
    return error_response(exc.status, exc.detail, exc.code, headers, **extra)


def _model_failure(request: Request, exc: Exception) -> JSONResponse:
    """A model provider failed during a request (memory jobs, compaction ...): a 502."""
    log.warning("model failure on %s %s: %s", request.method, request.url.path, exc)
    return error_response(502, describe(exc).message, "upstream_error")


def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        detail = f"No route for {request.method} {request.url.path}."
    elif exc.status_code == 405:
        detail = f"Method {request.method} is not allowed on {request.url.path}."
    else:
        detail = str(exc.detail)
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
    return error_response(exc.status_code, detail, headers=headers)


def allowed_methods(request: Request) -> list[str]:
    """Every method served at this path, from the route table (``api/routes.py``):
    each method of a path is its own route, so the one route Starlette tried
    names only its own; every route whose path matches adds its methods."""
    from famulus.api import routes  # the table imports every router, which use this module

    found: set[str] = set()
    for router in (*routes.PUBLIC, *routes.PROTECTED):
        for route in router.routes:
            matched, _ = route.matches(request.scope)
            if matched != Match.NONE:
                found |= set(getattr(route, "methods", None) or ())
    return sorted(found)


def _overflow(request: Request, exc: Exception) -> JSONResponse:
    """A number too large for SQLite that got past validation (e.g. inside a list)."""
    return error_response(
        422,
        "A number in the request is too large; ids are at most 2^63-1.",
        "invalid_request",
        errors=[{"loc": ["body"], "msg": "number too large"}],
    )


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "Internal server error; see the server log.", "internal")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(FamulusError, _domain)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(OverflowError, _overflow)
    for model_error in (ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded):
        app.add_exception_handler(model_error, _model_failure)
    app.add_exception_handler(Exception, _unexpected)
