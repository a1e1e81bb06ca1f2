"""The domain exception tree.

Services raise these; the HTTP layer turns each into the contract's error body
``{"detail", "code"}`` with the status the class carries::

    FamulusError (500 internal)
    ├── InvalidRequest (422 invalid_request)
    ├── BadRequest (400 invalid_request)
    ├── UnsupportedMediaType (415 invalid_request)
    ├── Unauthorized (401 unauthorized)
    ├── Forbidden (403 forbidden)
    ├── NotFound (404 not_found)
    ├── Conflict (409 conflict)
    ├── PayloadTooLarge (413 payload_too_large)
    ├── RateLimited (429 rate_limited)
    ├── UpstreamError (502 upstream_error)
    └── NotConfigured (503 not_configured)
"""

from __future__ import annotations


class FamulusError(Exception):
    status: int = 500
    code: str = "internal"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidRequest(FamulusError):
    """422; ``loc`` names the offending field like a validation error does."""

    status = 422
    code = "invalid_request"

    def __init__(self, detail: str, loc: list[str | int] | None = None) -> None:
        super().__init__(detail)
        self.loc = loc


class BadRequest(FamulusError):
    status = 400
    code = "invalid_request"


class UnsupportedMediaType(FamulusError):
    status = 415
    code = "invalid_request"


class Unauthorized(FamulusError):
    status = 401
    code = "unauthorized"


class Forbidden(FamulusError):
    status = 403
    code = "forbidden"


class NotFound(FamulusError):
    status = 404
    code = "not_found"


class Conflict(FamulusError):
    status = 409
    code = "conflict"


class PayloadTooLarge(FamulusError):
    status = 413
    code = "payload_too_large"


class RateLimited(FamulusError):
    status = 429
    code = "rate_limited"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class UpstreamError(FamulusError):
    status = 502
    code = "upstream_error"


class NotConfigured(FamulusError):
    status = 503
    code = "not_configured"
