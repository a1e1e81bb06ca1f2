"""The ``famulus`` command: serve, chat, key reset, version."""

from __future__ import annotations

import sys
from urllib.parse import quote

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError

from famulus import __version__
from famulus.auth import generate_key, write_key_file
from famulus.settings import Settings
from famulus.settings_errors import settings_errors

app = typer.Typer(
    help="famulus: a self-hosted personal AI agent server.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
BAD_SETTING = 2
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


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment and the command line; a bad one stops here
    with one line naming it, its value and what is allowed (exit status 2)."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except (ValidationError, SettingsError) as exc:
        for line in settings_errors(exc, overrides):
            typer.echo(f"famulus: {line}", err=True)
        raise typer.Exit(BAD_SETTING) from None


def web_address(settings: Settings) -> str:
    """Where a browser on this machine reaches the web client: the bound host,
    or loopback when the server listens on every address."""
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{settings.port}/"


def _ensure_key(settings: Settings) -> None:
    """First start without FAMULUS_API_KEY: make a key, print it once with a sign-in
    link for the browser (Jupyter-style), keep only its hash. Otherwise the key is
    the person's already; the start-up log line gives the address (every line
    the server writes after this is a log line, in the chosen log format)."""
    address = web_address(settings)
    if settings.api_key is not None or settings.key_file.exists():
        return
    key = generate_key()
    write_key_file(settings.key_file, key)
    typer.echo(
        "famulus: a new API key was generated. It is shown only this once; keep it safe:\n"
        f"\n    {key}\n\n"
        "Open this link in a browser to sign in to the web client:\n"
        f"\n    {address}#key={quote(key, safe='')}\n\n"
        "Clients send the key as 'Authorization: Bearer <key>'. "
        "Run 'famulus key reset' to replace it.",
        err=False,
    )


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Bind address (FAMULUS_HOST)."),
    # A string, so a bad port gets the same one-line settings error as FAMULUS_PORT.
    port: str | None = typer.Option(None, help="Port, 0-65535; 0 takes a free one (FAMULUS_PORT)."),
) -> None:
    """Start the server."""
    from famulus.serve import run

    overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    sys.exit(run(load_settings(**overrides), _ensure_key))


@app.command()
def chat(
    session: str | None = typer.Option(
        None, "--session", help="Resume this session (its id); default: a new one."
    ),
    url: str | None = typer.Option(
        None, "--url", help="The server; default http://FAMULUS_HOST:FAMULUS_PORT."
    ),
    key: str | None = typer.Option(None, "--key", help="The API key; default FAMULUS_API_KEY."),
) -> None:
    """Chat with a running famulus in this terminal."""
    from famulus.term.app import run_chat

    settings = load_settings()
    secret = key or (settings.api_key.get_secret_value() if settings.api_key else None)
    if not secret:
        typer.echo(
            "famulus: no API key: pass --key or set FAMULUS_API_KEY "
            "(the server keeps only a hash of its key)",
            err=True,
        )
        raise typer.Exit(BAD_SETTING)
    sys.exit(run_chat((url or web_address(settings)).rstrip("/"), secret, session))


@key_app.command("reset")
def key_reset() -> None:
    """Issue a new API key; the old one stops working at once."""
    settings = load_settings()
    settings.ensure_home()
    key = generate_key()
    write_key_file(settings.key_file, key)
    typer.echo(f"New API key (shown only once):\n\n    {key}\n")
    if settings.api_key is not None:
        typer.echo("Note: FAMULUS_API_KEY is set in this environment and takes precedence.")


if __name__ == "__main__":
    app()
