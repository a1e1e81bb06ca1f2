"""Create a chat session through the API, as a client of famulus would.

Tests that chat need a session id first; these are the one way they get it,
over the in-process ``client`` fixture or a client of a live server.
"""

from __future__ import annotations

import httpx


async def new_session(client: httpx.AsyncClient, name: str = "t") -> str:
    """``POST /sessions`` and return the new session's id (an error status raises)."""
    r = await client.post("/sessions", json={"name": name})
    r.raise_for_status()
    return str(r.json()["session_id"])


def new_session_sync(http: httpx.Client, name: str = "t") -> str:
    """``new_session`` for the synchronous client the live-server tests hold."""
    r = http.post("/sessions", json={"name": name})
    r.raise_for_status()
    return str(r.json()["session_id"])
