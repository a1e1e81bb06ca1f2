"""A small MCP server written with the ``mcp`` package, for famulus's MCP client tests.

Run it over stdio (``python -m tests.support.mcp_server``), the way a person
registers a local MCP server, or over streamable HTTP on 127.0.0.1
(``python -m tests.support.mcp_server --http PORT [--token TOKEN]``; with a
token every request must carry ``Authorization: Bearer TOKEN``, which is how
the tests see that a server's headers reach it). ``http_server()`` runs the
HTTP form as a subprocess for a test.

Tools: ``add`` and ``echo`` answer at once (``echo`` is annotated read-only); ``env`` and ``pid`` tell what
the process was given and which one it is (famulus must pass the configured
env and none of its own, and end the process when it stops); ``slow``
sleeps; ``crash`` ends the process without answering; ``fail`` returns an
MCP tool error; ``search`` shares its name with famulus's own search.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def build() -> Any:
    # Imported here: the test process only spawns the server.
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("famulus-test")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def search(query: str) -> str:
        """Pretend to search (its name, under a server named "web", is famulus's web_search)."""
        return f"mcp search: {query}"

    @server.tool()
    def env(name: str) -> str:
        """The value of an environment variable of this server, or '(unset)'."""
        return os.environ.get(name, "(unset)")

    @server.tool()
    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then say how long."""
        import anyio

        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def crash() -> str:
        """End this server's process at once, without an answer."""
        os._exit(3)

    @server.tool()
    def fail(reason: str) -> str:
        """Fail with the given reason (an MCP tool error)."""
        raise ValueError(reason)

    return server


def _serve_http(port: int, token: str | None) -> None:
    import uvicorn

    app = build().streamable_http_app(host="127.0.0.1")
    if token:
        app = _require_token(app, token)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _require_token(app: Any, token: str) -> Any:
    """Wrap the ASGI app so a request without the bearer token gets 401."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing token"})
            return
        await app(scope, receive, send)

    return guarded


@contextmanager
def http_server(port: int, token: str | None = None) -> Iterator[str]:
    """This server over streamable HTTP in a subprocess; yields its MCP URL."""
    args = [sys.executable, "-m", "tests.support.mcp_server", "--http", str(port)]
    if token:
        args += ["--token", token]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the test MCP server exited before it listened")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the test MCP server did not listen in time")


def stdio_command() -> tuple[str, list[str]]:
    """The command and args that start this server over stdio from any directory."""
    code = (
        f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'src')!r}]; "
        "from tests.support.mcp_server import build; build().run()"
    )
    return sys.executable, ["-c", code]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--token")
    options = parser.parse_args()
    if options.http:
        _serve_http(options.http, options.token)
    else:
        build().run()


if __name__ == "__main__":
    main()
