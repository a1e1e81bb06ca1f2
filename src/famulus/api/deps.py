"""Request dependencies: the container and the bearer-key check."""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from famulus.api.bodyless import refuse_unexpected_body
from famulus.errors import Unauthorized
from famulus.wiring import Container

_bearer = HTTPBearer(auto_error=False, description="The famulus API key")


def container(request: Request) -> Container:
    found = request.app.state.container
    assert isinstance(found, Container)
    return found


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def require_key(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> None:
    """Every endpoint but /health: a valid key, with wrong keys throttled per address.

    Only a wrong key counts as a failure: a request without any key guesses
    nothing, and counting it would lock out a client that merely forgot the
    header. A valid key clears the address's count.
    """
    await check_credentials(request, credentials)
    await refuse_unexpected_body(request)


async def check_key(request: Request) -> None:
    """``require_key``'s key check for an ASGI app mounted beside the routes
    (``/mcp``), where FastAPI's dependencies do not run: same verifier, same
    throttle, same errors."""
    await check_credentials(request, await _bearer(request))


async def check_credentials(
    request: Request, credentials: HTTPAuthorizationCredentials | None
) -> None:
    scheme, token = (credentials.scheme, credentials.credentials) if credentials else ("", "")
    # scrypt may run: off the event loop.
    await run_in_threadpool(
        authenticate, container(request), client_address(request), scheme, token
    )


def authenticate(c: Container, client: str, scheme: str, token: str) -> None:
    """Raise Unauthorized or RateLimited unless ``token`` is the key (shared with
    the middleware that must know the caller before it judges a body)."""
    c.throttle.check(client)
    if not token or scheme.lower() != "bearer":
        raise Unauthorized("Missing API key: send 'Authorization: Bearer <API_KEY>'.")
    if not c.verifier.verify(token):
        c.throttle.record_failure(client)
        raise Unauthorized(
            "Invalid API key. Use the key printed at first start, or run 'famulus key reset'."
        )
    c.throttle.clear(client)


def token_is_valid(request: Request) -> bool | None:
    """For /health: None without a token, else whether it is valid.

    /health stays 200 for everyone, so it must not become an unthrottled way
    to test guesses: a wrong token counts as a failure, and while an address
    is throttled every token reads as not valid.
    """
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    c = container(request)
    client = client_address(request)
    if c.throttle.blocked(client):
        return False
    if c.verifier.verify(token.strip()):
        c.throttle.clear(client)
        return True
    c.throttle.record_failure(client)
    return False
