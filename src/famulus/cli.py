"""The ``famulus`` command: serve, key reset, version."""

from __future__ import annotations

import contextlib
import logging
import socket
import sys

import typer

from famulus import __version__
from famulus.auth import generate_key, write_key_file
from famulus.settings import Settings

app = typer.Typer(
    help="famulus: a self-hosted personal AI agent server.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
STARTUP_FAILURE = 3  # uvicorn's exit code when the server could not start
key_app = typer.Typer(help="Manage the API key.", no_args_is_help=True)
app.add_typer(key_app, name="key")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"famulus {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """famulus: chat, memory, skills and automations over HTTP."""


def _ensure_key(settings: Settings) -> None:
    """First start without FAMULUS_API_KEY: make a key, print it once, keep its hash."""
    if settings.api_key is not None or settings.key_file.exists():
        return
    key = generate_key()
    write_key_file(settings.key_file, key)
    typer.echo(
        "famulus: a new API key was generated. It is shown only this once; keep it safe:\n"
        f"\n    {key}\n\n"
        "Clients send it as 'Authorization: Bearer <key>'. "
        "Run 'famulus key reset' to replace it.",
        err=False,
    )


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Bind address (FAMULUS_HOST)."),
    port: int | None = typer.Option(None, help="Port (FAMULUS_PORT)."),
) -> None:
    """Start the server."""
    import uvicorn

    from famulus.app import create_app

    settings = Settings()
    if host:
        settings.host = host
    if port:
        settings.port = port
    settings.ensure_home()
    _ensure_key(settings)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    app_ = create_app(settings)
    container = app_.state.container

    class Server(uvicorn.Server):
        """Drains the app the moment shutdown begins (live chat runs record what they
        said so far), before uvicorn waits up to 3 s for open streams and the
        lifespan stops the services."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await container.drain()
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app_,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        timeout_graceful_shutdown=3,
    )
    server = Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


@key_app.command("reset")
def key_reset() -> None:
    """Issue a new API key; the old one stops working at once."""
    settings = Settings()
    settings.ensure_home()
    key = generate_key()
    write_key_file(settings.key_file, key)
    typer.echo(f"New API key (shown only once):\n\n    {key}\n")
    if settings.api_key is not None:
        typer.echo("Note: FAMULUS_API_KEY is set in this environment and takes precedence.")


if __name__ == "__main__":
    app()
