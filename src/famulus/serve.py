"""``famulus serve``: claim the home, bind the port, then start the app.

The order is the point. Startup recovery rewrites the database (runs left
running become ``interrupted``), so it must never run in a process that will
not serve: the home's lock is taken first (another server there → exit 1, the
home untouched) and the socket is bound next (port taken → exit 1), both before
the app opens the database. uvicorn is then handed the bound socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import shutil
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn

from famulus import logs, telemetry
from famulus.home_lock import HomeInUse, HomeLock
from famulus.settings import Settings

log = logging.getLogger("famulus")

PR_SET_DUMPABLE = 4  # from <linux/prctl.h>
IN_USE = 1  # the home or the port belongs to someone else
STARTUP_FAILURE = 3  # uvicorn's exit code when the app could not start


class StartRefused(Exception):
    """Why this process will not serve; one line for the person, and an exit status."""

    def __init__(self, message: str, status: int = IN_USE) -> None:
        super().__init__(message)
        self.status = status


def bind(host: str, port: int) -> socket.socket:
    """A socket bound (not yet listening) to host:port; port 0 takes a free one."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise StartRefused(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise StartRefused(f"cannot listen on {host}:{port}: {reason.lower()}") from None
    return sock


def claim(settings: Settings) -> tuple[HomeLock, socket.socket]:
    """The home's lock, then the port. A refusal leaves no trace: not even the
    home directory, when this call was what created it."""
    fresh = not settings.home.exists()
    settings.ensure_home()
    lock = HomeLock(settings.lock_file)
    try:
        lock.acquire()
    except HomeInUse as exc:
        raise StartRefused(
            f"home {exc.home} is in use by another famulus server "
            f"({exc.holder.describe()}); stop it first or set FAMULUS_HOME to another directory"
        ) from None
    try:
        sock = bind(settings.host, settings.port)
    except StartRefused:
        lock.release()
        if fresh:
            shutil.rmtree(settings.home, ignore_errors=True)
        raise
    lock.describe(settings.host, int(sock.getsockname()[1]))
    return lock, sock


def run(settings: Settings, before_app: Callable[[Settings], None]) -> int:
    """Serve until stopped; returns the process's exit status."""
    try:
        stop_tracing = telemetry.start(settings)  # before the home is touched
    except telemetry.TelemetryUnavailable as exc:
        print(f"famulus: {exc}", file=sys.stderr)
        return STARTUP_FAILURE
    try:
        return _claim_and_serve(settings, before_app, stop_tracing)
    finally:
        stop_tracing()  # when the app never started; a no-op after _Server.shutdown


def _claim_and_serve(
    settings: Settings, before_app: Callable[[Settings], None], stop_tracing: telemetry.Stop
) -> int:
    from famulus.app import create_app

    try:
        lock, sock = claim(settings)
    except StartRefused as refused:
        print(f"famulus: {refused}", file=sys.stderr)
        return refused.status
    settings.port = int(sock.getsockname()[1])
    not_dumpable()
    try:
        before_app(settings)
        logs.configure(settings.log_level, settings.log_format)
        app = create_app(settings)
        server = _Server(_config(app, settings), settings.home, app.state.container.drain)
        server.after_stop = stop_tracing
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
        return 0 if server.started else STARTUP_FAILURE
    finally:
        sock.close()
        lock.release()


def not_dumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): the kernel then keeps other processes of the same
    user (a skill script started unsandboxed, say) out of /proc/<pid>/environ and
    /proc/<pid>/mem, where the server's keys live. Linux only; elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.warning("could not make the server non-dumpable (errno %d)", ctypes.get_errno())
    except OSError:
        log.warning("could not make the server non-dumpable (no libc prctl)")


def _config(app: object, settings: Settings) -> uvicorn.Config:
    trusted = settings.trusted_proxies
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=settings.host,
        port=settings.port,
        log_config=None,
        log_level=settings.log_level,
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or "",
        server_header=False,
        timeout_graceful_shutdown=3,
    )


class _Server(uvicorn.Server):
    """Drains the app the moment shutdown begins (live chat runs record what they
    said so far, open streams end), before uvicorn waits for open connections and
    the lifespan stops the services. Logs the address it really serves, which
    differs from the setting when the port was 0."""

    def __init__(
        self, config: uvicorn.Config, home: Path, drain: Callable[[], Awaitable[None]]
    ) -> None:
        super().__init__(config)
        self.home = home
        self.drain = drain
        # Runs once the services have stopped: uvicorn re-raises SIGTERM as soon as
        # run() returns, so whatever must be sent before the process ends (the last
        # trace spans) is sent from here.
        self.after_stop: Callable[[], None] = lambda: None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and sockets:
            host, port = sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            log.info(
                "famulus running on http://%s:%d (home %s); open it in a browser for the web client",
                shown,
                port,
                self.home,
            )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.drain()
        await super().shutdown(sockets)
        await asyncio.to_thread(self.after_stop)
