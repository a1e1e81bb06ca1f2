"""The ``famulus`` command: serve, chat, key reset, version, and the operating
commands (backup, restore, doctor, service) whose logic lives in ``famulus.ops``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
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
service_app = typer.Typer(help="Run famulus as a systemd user service.", no_args_is_help=True)
app.add_typer(service_app, name="service")


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


# -- install and operate (issue 11): thin commands over famulus.ops ------------------


@app.command()
def backup(
    path: Path = typer.Argument(
        ..., help="The archive to write (.tar.gz), or a directory to write it into."
    ),
) -> None:
    """Back up the database, secrets and skills into one owner-only archive.

    The database copy is consistent even while a server runs and writes."""
    from famulus.ops.backup import BackupError
    from famulus.ops.backup import backup as run_backup

    try:
        target, manifest = run_backup(load_settings(), path)
    except BackupError as exc:
        typer.echo(f"famulus: backup failed: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"famulus: backed up to {target} (schema {manifest.schema})")


@app.command()
def restore(
    path: Path = typer.Argument(..., help="An archive written by 'famulus backup'."),
    force: bool = typer.Option(False, "--force", help="Replace the data of a non-empty home."),
) -> None:
    """Restore a backup into FAMULUS_HOME (the server there must be stopped)."""
    from famulus.ops.backup import BackupError
    from famulus.ops.backup import restore as run_restore

    settings = load_settings()
    try:
        manifest = run_restore(settings, path, force=force)
    except BackupError as exc:
        typer.echo(f"famulus: restore failed: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(
        f"famulus: restored the backup of {manifest.created_at} "
        f"(famulus {manifest.famulus_version}) into {settings.home}"
    )


@app.command()
def doctor() -> None:
    """Check this home and everything famulus needs; one line each, with the fix.

    The home, its files, the database, the key, each connected provider and
    service, the embedding model, the skill sandbox and the disk. Starts no
    server; exit status 1 when any check fails."""
    import asyncio

    from famulus.ops.doctor import render, run_checks

    checks = asyncio.run(run_checks(load_settings()))
    for check in checks:
        typer.echo(render(check, lambda text, colour: typer.style(text, fg=colour, bold=True)))
    if any(c.status == "fail" for c in checks):
        raise typer.Exit(1)


@app.command()
def usage(
    from_: str | None = typer.Option(None, "--from", help="First day (YYYY-MM-DD) or datetime."),
    to: str | None = typer.Option(None, "--to", help="Last day (YYYY-MM-DD) or datetime."),
    by: str = typer.Option("day", "--by", help="day, model, source, session or automation."),
) -> None:
    """Print tokens and spend from the usage ledger (default: the last 30 days by day).

    Reads this home's database read-only, with or without a running server."""
    from famulus.errors import InvalidRequest
    from famulus.usage.report import GROUP_BY
    from famulus.usage.table import print_report

    if by not in GROUP_BY:
        typer.echo(f"famulus: --by must be one of {', '.join(GROUP_BY)}", err=True)
        raise typer.Exit(2)
    try:
        print_report(load_settings(), from_, to, by)
    except InvalidRequest as exc:
        typer.echo(f"famulus: {exc.detail}", err=True)
        raise typer.Exit(2) from None


@service_app.command("install")
def service_install(
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the unit; write nothing."),
    force: bool = typer.Option(False, "--force", help="Replace a different existing unit."),
) -> None:
    """Write the systemd user unit for this famulus and FAMULUS_HOME.

    ~/.config/systemd/user/famulus.service; prints the systemctl command to
    enable it (it does not run systemctl)."""
    from famulus.ops.service_unit import ENABLE_COMMAND, ServiceError, env_file, install

    settings = load_settings()
    try:
        done = install(settings.home, dry_run=dry_run, force=force)
    except ServiceError as exc:
        typer.echo(f"famulus: {exc}", err=True)
        raise typer.Exit(1) from None
    if dry_run:
        typer.echo(f"# {done.path} (not written: --dry-run)\n{done.text}", nl=False)
        return
    state = "wrote" if done.written else "already up to date:"
    typer.echo(
        f"famulus: {state} {done.path}\n"
        f"Settings and provider keys for the service go in {env_file(os.environ)} "
        "(KEY=value lines; chmod 600).\n"
        f"Start it now and at every login with:\n\n    {ENABLE_COMMAND}\n\n"
        "To keep it running while you are logged out: loginctl enable-linger $USER"
    )


if __name__ == "__main__":
    app()
