"""Runtime settings, all read from ``FAMULUS_*`` environment variables.

Every external service is reached through a base URL that is a setting, so the
tests can point each one at a small local server speaking its protocol. The one
exception is the keyless web search: the ``ddgs`` library holds its engines' URLs,
so it is reached through a proxy setting instead (``web_search_proxy``), which
the tests point at a fake. The old ``FAMULUS_DDG_BASE_URL`` is no longer read
(unknown variables are ignored).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


# A browser origin: scheme, host, optional port; nothing after it.
_ORIGIN = re.compile(
    r"^https?://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$",
)


# An http(s) base URL: scheme, host, optional port and path; no query or fragment.
_BASE_URL = re.compile(
    r"^https?://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[^\s?#]*)?$",
)


def split_origins(value: str) -> list[str]:
    """``FAMULUS_CORS_ORIGINS`` as a list (commas, blanks around them ignored)."""
    return [o.strip() for o in value.split(",") if o.strip()]


def _default_home() -> Path:
    return Path.home() / ".famulus"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FAMULUS_", extra="ignore")

    host: str = Field(default="127.0.0.1", min_length=1)
    # 0 asks the OS for a free port; the one it gives is logged at start.
    port: int = Field(default=6877, ge=0, le=65535)
    home: Path = Field(default_factory=_default_home)
    api_key: SecretStr | None = None
    timezone: str | None = None
    log_level: str = "info"
    log_format: Literal["text", "json"] = "text"
    # Addresses (IPs or CIDRs, comma-separated, or "*") of reverse proxies whose
    # X-Forwarded-For / X-Forwarded-Proto are believed. Unset: none are, so a
    # client cannot pick the address the auth throttle counts it under.
    trusted_proxies: str | None = None
    # Browser origins (scheme://host[:port], comma-separated, or "*") allowed to
    # call the API from another page, e.g. Open WebUI talking to /v1 directly.
    # Empty: no CORS headers at all, so no other origin's page can read answers.
    cors_origins: str = ""

    # Authentication throttling: failures per client address within the window.
    auth_max_failures: int = 10
    auth_failure_window_s: float = 60.0

    # Spend caps in USD on model requests (unset: no cap); PATCH /config overrides them.
    budget_daily: float | None = Field(default=None, gt=0)
    budget_monthly: float | None = Field(default=None, gt=0)

    # Event stream
    sse_ping_interval_s: float = 15.0

    # Request size limits (bytes)
    max_body_bytes: int = 1024 * 1024
    max_chat_body_bytes: int = 20 * 1024 * 1024

    # Provider and service base URLs (settings so tests can use local servers)
    openai_base_url: str = "https://api.openai.com/v1"
    anthropic_base_url: str = "https://api.anthropic.com"
    google_base_url: str = "https://generativelanguage.googleapis.com"
    openrouter_base_url: str = "https://openrouter.ai/api/v1"
    codex_base_url: str = "https://chatgpt.com/backend-api/codex"
    codex_auth_url: str = "https://auth.openai.com/oauth/authorize"
    codex_token_url: str = "https://auth.openai.com/oauth/token"
    codex_client_id: str = "app_EMoamEEZ73f0CkXaXp7hrann"
    # Loopback port of the OAuth redirect listener; the public Codex client is
    # registered for http://localhost:1455/auth/callback. 0 picks a free port.
    codex_callback_port: int = 1455
    exa_base_url: str = "https://api.exa.ai"
    # The keyless web search (ddgs): an HTTP(S)/SOCKS proxy for its requests, and
    # a CA bundle to trust in place of the system's (e.g. a proxy's own CA).
    web_search_proxy: str | None = None
    web_search_ca_file: Path | None = None
    # fetch_page refuses loopback, private and link-local addresses unless this
    # is on (for an owner who wants the agent to read pages on their own LAN).
    fetch_allow_private: bool = False
    telegram_base_url: str = "https://api.telegram.org"
    skills_host_url: str = "https://api.github.com"

    # Memory: extraction runs when a session is quiet this long, or at once
    # after this many new messages; the recalled-memory budget in the prompt.
    memory_quiet_s: float = 120.0
    memory_extract_after_messages: int = 20
    memory_budget_chars: int = 4000

    # Outgoing e-mail for the email notifier
    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_from: str | None = None
    smtp_starttls: bool = False
    smtp_ssl: bool = False

    # Notifier deliveries that fail for a passing reason are tried again after
    # each of these waits (seconds; 4 tries at about 0, 30 s, 2 min, 5 min);
    # a Retry-After from the receiver is honoured up to the cap.
    notify_retry_delays_s: list[Annotated[float, Field(ge=0)]] = [30.0, 90.0, 180.0]
    notify_retry_after_max_s: float = Field(default=600.0, ge=0)

    # The mail and calendar account (the "account" integration): IMAP for
    # reading mail, CalDAV for the calendar; one login for both. Sending mail
    # uses the SMTP settings above.
    account_username: str | None = None
    account_password: SecretStr | None = None
    imap_host: str | None = None
    imap_port: int = 993
    imap_ssl: bool = True
    caldav_url: str | None = None
    # How often the calendar is polled for event-triggered automations.
    calendar_poll_s: float = 60.0

    # Skill scripts run in a bubblewrap sandbox (skills/sandbox.py); without a
    # usable bwrap they are refused unless unsandboxed runs are allowed.
    bwrap_path: str = "bwrap"
    unsandboxed_scripts: bool = False

    # MCP servers the person registered (mcp/): how long one tool call may take,
    # and how long starting or connecting to a server (with its tool list) may take,
    # before the call or the connection is given up as failed (seconds).
    mcp_timeout_s: float = Field(default=30.0, gt=0)
    mcp_connect_timeout_s: float = Field(default=15.0, gt=0)

    # Where the working directory's project skills live (``.skills/``)
    project_dir: Path = Field(default_factory=Path.cwd)

    # OpenTelemetry traces of runs and tool calls (telemetry.py; needs the
    # ``famulus[otel]`` extra): the base URL of an OTLP/HTTP collector, such as
    # http://127.0.0.1:4318. Unset: no tracing at all.
    otel_endpoint: str | None = None
    otel_service_name: str = Field(default="famulus", min_length=1)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        """An unknown zone would silently fall back to the machine's clock."""
        if value is None or value == "":
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long
            raise ValueError("must be an IANA time zone name such as Europe/Berlin") from None
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: str) -> str:
        for origin in split_origins(value):
            if origin != "*" and not _ORIGIN.match(origin):
                raise ValueError(
                    f"'{origin}' is not an origin; give scheme://host[:port] such as "
                    "http://localhost:3000 (no path), comma-separated, or *"
                )
        return value

    @field_validator("otel_endpoint")
    @classmethod
    def _collector_url(cls, value: str | None) -> str | None:
        """Checked at start, so a typo is not found out by traces that never arrive."""
        if value is None or value.strip() == "":
            return None
        if not _BASE_URL.match(value.strip()):
            raise ValueError(
                "must be the http(s) base URL of an OTLP/HTTP collector, "
                "such as http://127.0.0.1:4318"
            )
        return value.strip().rstrip("/")

    @property
    def cors_origin_list(self) -> list[str]:
        """Lower-cased, as browsers send ``Origin``."""
        return [o.lower() for o in split_origins(self.cors_origins)]

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value.lower() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return value.lower()

    @property
    def db_path(self) -> Path:
        return self.home / "famulus.db"

    @property
    def lock_file(self) -> Path:
        return self.home / "famulus.lock"

    @property
    def key_file(self) -> Path:
        return self.home / "api_key.json"

    @property
    def secrets_file(self) -> Path:
        return self.home / "secrets.json"

    @property
    def skills_dir(self) -> Path:
        return self.home / "skills"

    def ensure_home(self) -> None:
        """Create the data directory owner-only: it holds history and secrets."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o700)
