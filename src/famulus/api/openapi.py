"""The OpenAPI document describes the errors the server really sends.

FastAPI documents a 422 as its own ``HTTPValidationError`` (``detail`` a list)
and nothing else, while famulus answers every error with ``{"detail": str,
"code": str, "errors"?: [...]}`` (``api/errors.py``). Generated clients then
fail on the first error. So the document is rewritten once: one ``Error``
schema, and on each operation every status it can answer for reasons common to
all routes (the key, the throttle, path ids, bodies, size limits).
Statuses that only some services raise (409, 502, 503 …) are added where a
route declares them; the common ones are added here.
"""

from __future__ import annotations

import re
from typing import Any

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["detail", "code"],
    "properties": {
        "detail": {"type": "string", "description": "One sentence a person can act on."},
        "code": {
            "type": "string",
            "description": "Machine code: unauthorized, forbidden, not_found, conflict, "
            "payload_too_large, invalid_request, method_not_allowed, rate_limited, "
            "upstream_error, not_configured, internal.",
        },
        "errors": {
            "type": "array",
            "description": "422 only: each failing field.",
            "items": {
                "type": "object",
                "required": ["loc", "msg"],
                "properties": {
                    "loc": {
                        "type": "array",
                        "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    },
                    "msg": {"type": "string"},
                },
            },
        },
    },
    "additionalProperties": True,
}
_COMMON = {
    "401": "Missing or invalid API key.",
    "422": "The request does not validate (`errors` names each field).",
    "429": "Too many failed authentications from this address (see Retry-After).",
    "500": "An unexpected server error (never a stack trace).",
}
_WITH_BODY = {
    "400": "The body is not valid JSON, or nests more than 100 levels.",
    "413": "The body is larger than the limit.",
    "415": "The body was not sent as JSON.",
}
_PUBLIC = {"/health"}
# /v1 answers errors in OpenAI's shape (api/openai_errors.py), a 422 as 400.
OPENAI_PREFIX = "/v1/"
OPENAI_ERROR_REF = {"$ref": "#/components/schemas/OpenAIError"}
OPENAI_ERROR_SCHEMA: dict[str, Any] = {
    "title": "OpenAIError",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "code": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
        }
    },
}


def _error(description: str, ref: dict[str, str] = ERROR_REF) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def describe_errors(doc: dict[str, Any]) -> dict[str, Any]:
    """Rewrite ``doc`` in place (and return it): the real error body everywhere."""
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Error"] = ERROR_SCHEMA
    schemas["OpenAIError"] = OPENAI_ERROR_SCHEMA
    for path, operations in doc.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            _operation_errors(path, method, operation)
    return doc


def _operation_errors(path: str, method: str, operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation["responses"]
    wanted = dict(_COMMON) if path not in _PUBLIC else {"500": _COMMON["500"]}
    looks_up = operation.get("parameters") or operation.get("requestBody")
    if path not in _PUBLIC and (re.search(r"\{[^}]+\}", path) or looks_up):
        wanted["404"] = "An id in the path, query or body names nothing that exists."
    if method.upper() in ("POST", "PUT", "PATCH", "DELETE"):
        wanted.update(_WITH_BODY)
    ref = ERROR_REF
    if path.startswith(OPENAI_PREFIX):
        ref = OPENAI_ERROR_REF
        responses.pop("422", None)
        wanted.pop("422")
        wanted["400"] = "The request does not validate, or its body is not valid JSON."
    for status, description in wanted.items():
        current = responses.get(status)
        text = current.get("description", description) if isinstance(current, dict) else description
        if status == "422" or current is None or "content" not in current:
            responses[status] = _error(text if status != "422" else description, ref)
    for status, response in responses.items():  # statuses a route declared itself
        if status.startswith(("4", "5")) and isinstance(response, dict):
            response.setdefault("content", {"application/json": {"schema": ref}})
