"""The openai-codex sign-in: authorization code with PKCE and a loopback redirect.

Why a loopback listener: the person signs in in their own browser, which then
redirects to ``http://localhost:<port>/auth/callback`` on the machine running
famulus; the listener checks ``state``, exchanges the code (with the PKCE
verifier, so an intercepted code is useless) and stores the tokens in the
secrets file. Access tokens are refreshed shortly before they expire.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from famulus.errors import Conflict, NotConfigured, UpstreamError
from famulus.secrets import SecretsStore
from famulus.settings import Settings
from famulus.timeutil import iso

log = logging.getLogger(__name__)

FlowStatus = Literal["idle", "pending", "connected", "expired", "error"]
SECRET_NAME = "oauth:openai-codex"
FLOW_TTL_S = 600.0  # a pending sign-in is abandoned after 10 minutes
REFRESH_MARGIN_S = 300.0  # refresh when the access token has less than 5 minutes left
SCOPE = "openid profile email offline_access"
CALLBACK_PATH = "/auth/callback"
TIMEOUT_S = 10.0


@dataclass
class _Flow:
    state: str
    verifier: str
    redirect_uri: str
    expires_at: float
    server: asyncio.base_events.Server | None = None
    status: FlowStatus = "pending"
    error: str | None = None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge) per RFC 7636."""
    verifier = _b64url(secrets.token_bytes(48))
    return verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def _account_id(id_token: str | None) -> str | None:
    """The ChatGPT account id from the (unverified) id_token claims, if present."""
    if not id_token or id_token.count(".") != 2:
        return None
    payload = id_token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, json.JSONDecodeError):
        return None
    auth = claims.get("https://api.openai.com/auth") if isinstance(claims, dict) else None
    value = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    return value if isinstance(value, str) else None


class _TokenRefused(UpstreamError):
    """The token endpoint answered and said no (e.g. invalid_grant): retrying will not help."""


class CodexOAuth:
    """One sign-in flow at a time, plus the stored tokens and their refresh."""

    def __init__(self, settings: Settings, secrets_store: SecretsStore) -> None:
        self.settings = settings
        self.secrets = secrets_store
        self._flow: _Flow | None = None
        self._refresh_lock = asyncio.Lock()
        # Called after a successful sign-in (LLMService makes the model usable at once).
        self.on_connected: Callable[[], Awaitable[None]] | None = None

    # -- tokens ---------------------------------------------------------------

    def tokens(self) -> dict[str, Any] | None:
        value = self.secrets.get(SECRET_NAME)
        return value if isinstance(value, dict) and value.get("access_token") else None

    def connected(self) -> bool:
        """Usable: a token that is still valid, or one we can refresh."""
        tok = self.tokens()
        if tok is None:
            return False
        return bool(tok.get("refresh_token")) or float(tok.get("expires_at", 0)) > time.time()

    def disconnect(self) -> None:
        self._close_listener()
        self._flow = None
        self.secrets.delete(SECRET_NAME)

    async def access_token(self) -> tuple[str, str | None]:
        """(access token, account id), refreshed first when close to expiry."""
        async with self._refresh_lock:
            tok = self.tokens()
            if tok is None:
                raise NotConfigured(
                    "openai-codex is not signed in: start the sign-in with"
                    " POST /providers/openai-codex/oauth/browser/start."
                )
            if float(tok.get("expires_at", 0)) - time.time() < REFRESH_MARGIN_S:
                tok = await self._refresh(tok)
            return str(tok["access_token"]), tok.get("account_id")

    async def _refresh(self, tok: dict[str, Any]) -> dict[str, Any]:
        still_valid = float(tok.get("expires_at", 0)) > time.time()
        refresh_token = tok.get("refresh_token")
        if not refresh_token:
            if still_valid:
                return tok
            raise NotConfigured("The openai-codex sign-in has expired: sign in again.")
        form = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": self.settings.codex_client_id,
        }
        try:
            fresh = await self._token_request(form)
        except UpstreamError as exc:
            if isinstance(exc, _TokenRefused):  # a dead refresh token: sign-in needed again
                self.secrets.set(SECRET_NAME, {**tok, "refresh_token": None})
            if still_valid:  # keep using the current token until it runs out
                log.warning("openai-codex token refresh failed; using the current token")
                return tok
            raise NotConfigured(
                "The openai-codex sign-in has expired and could not be refreshed"
                f" ({exc.detail}); sign in again with POST"
                " /providers/openai-codex/oauth/browser/start."
            ) from None
        merged = self._store_tokens(fresh, previous=tok)
        return merged

    def _store_tokens(
        self, body: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        prev = previous or {}
        expires_in = body.get("expires_in")
        lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
        record = {
            "access_token": body["access_token"],
            "refresh_token": body.get("refresh_token") or prev.get("refresh_token"),
            "expires_at": time.time() + lifetime,
            "account_id": _account_id(body.get("id_token")) or prev.get("account_id"),
        }
        self.secrets.set(SECRET_NAME, record)
        return record

    async def _token_request(self, form: dict[str, str]) -> dict[str, Any]:
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
                response = await http.post(self.settings.codex_token_url, data=form)
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"the token endpoint could not be reached ({type(exc).__name__})"
            ) from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 400 or not isinstance(body, dict) or "access_token" not in body:
            reason = (
                body.get("error_description") or body.get("error")
                if isinstance(body, dict)
                else None
            )
            message = (
                f"the token endpoint answered HTTP {response.status_code}: {reason or 'no token'}"
            )
            if 400 <= response.status_code < 500:
                raise _TokenRefused(message)
            raise UpstreamError(message)
        return body

    # -- the browser flow -----------------------------------------------------

    async def start(self) -> dict[str, Any]:
        """Open the loopback listener and return the URL the person must visit."""
        self._close_listener()
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(24)
        flow = _Flow(
            state=state, verifier=verifier, redirect_uri="", expires_at=time.time() + FLOW_TTL_S
        )
        port = self.settings.codex_callback_port
        host = "127.0.0.1" if port == 0 else "localhost"
        try:
            server = await asyncio.start_server(self._handle, host=host, port=port)
        except OSError as exc:
            raise Conflict(
                f"The sign-in listener could not open {host}:{port} ({exc.strerror or exc});"
                " close whatever uses that port or set FAMULUS_CODEX_CALLBACK_PORT."
            ) from None
        bound = server.sockets[0].getsockname()[1]
        flow.server = server
        flow.redirect_uri = (
            f"http://{'127.0.0.1' if port == 0 else 'localhost'}:{bound}{CALLBACK_PATH}"
        )
        self._flow = flow
        query = {
            "response_type": "code",
            "client_id": self.settings.codex_client_id,
            "redirect_uri": flow.redirect_uri,
            "scope": SCOPE,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "id_token_add_organizations": "true",
            "codex_cli_simplified_flow": "true",
        }
        url = f"{self.settings.codex_auth_url}?{urlencode(query)}"
        expires = datetime.fromtimestamp(flow.expires_at, UTC)
        return {"status": "pending", "url": url, "expires_at": iso(expires)}

    def status(self) -> dict[str, Any]:
        flow = self._flow
        connected = self.connected()
        if flow is not None and flow.status == "pending" and time.time() > flow.expires_at:
            self._close_listener()
            flow.status = "expired"
            flow.error = "The sign-in was not completed within 10 minutes; start it again."
        if flow is not None and flow.status in ("pending", "error", "expired"):
            body: dict[str, Any] = {"status": flow.status, "connected": connected}
            if flow.error:
                body["error"] = flow.error
            return body
        if connected:
            return {"status": "connected", "connected": True}
        if self.tokens() is not None:
            return {
                "status": "expired",
                "connected": False,
                "error": "The sign-in has expired: start it again.",
            }
        return {"status": "idle", "connected": False}

    async def stop(self) -> None:
        self._close_listener()

    def _close_listener(self) -> None:
        flow = self._flow
        if flow is not None and flow.server is not None:
            flow.server.close()
            flow.server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
            while (await asyncio.wait_for(reader.readline(), TIMEOUT_S)) not in (
                b"\r\n",
                b"\n",
                b"",
            ):
                pass
            parts = request_line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
            if target.path != CALLBACK_PATH:
                await _respond(writer, 404, "Not found.")
                return
            status, message = await self._callback(parse_qs(target.query))
            await _respond(writer, status, message)
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _callback(self, query: dict[str, list[str]]) -> tuple[int, str]:
        flow = self._flow
        first = {k: v[0] for k, v in query.items() if v}
        if flow is None or flow.status != "pending":
            return 400, "No sign-in is in progress; start it again from famulus."
        if time.time() > flow.expires_at:
            flow.status, flow.error = "expired", "The sign-in took longer than 10 minutes."
            return 400, flow.error
        if not secrets.compare_digest(first.get("state", ""), flow.state):
            return 400, "The sign-in response does not match the request (state); start again."
        if "error" in first:
            return self._fail(flow, f"The provider refused the sign-in: {first['error']}.")
        code = first.get("code")
        if not code:
            return self._fail(flow, "The sign-in response carried no authorization code.")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.redirect_uri,
            "client_id": self.settings.codex_client_id,
            "code_verifier": flow.verifier,
        }
        try:
            body = await self._token_request(form)
        except UpstreamError as exc:
            return self._fail(flow, f"Exchanging the code failed: {exc.detail}.")
        self._store_tokens(body)
        flow.status = "connected"
        if self.on_connected is not None:
            await self.on_connected()
        asyncio.get_running_loop().call_soon(self._close_listener)
        return 200, "famulus is signed in to OpenAI Codex. You can close this window."

    def _fail(self, flow: _Flow, message: str) -> tuple[int, str]:
        flow.status, flow.error = "error", message
        asyncio.get_running_loop().call_soon(self._close_listener)
        return 400, message


async def _respond(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "OK")
    body = f"<!doctype html><title>famulus</title><p>{html.escape(message)}</p>".encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("latin-1")
    writer.write(head + body)
    await writer.drain()
