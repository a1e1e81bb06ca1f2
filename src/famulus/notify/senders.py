"""Delivery over each channel. Every failure becomes DeliveryError (an
UpstreamError, so the API answers 502) with the reason, whether trying again
later may help, and how long the receiver asked us to wait (Retry-After), so
the delivery queue knows whether and when to retry."""

from __future__ import annotations

import asyncio
import smtplib
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr, parsedate_to_datetime
from typing import Any

import httpx

from famulus.errors import NotConfigured, UpstreamError
from famulus.settings import Settings
from famulus.timeutil import utcnow

_TIMEOUT = 15.0
TELEGRAM_LIMIT = 4096
# HTTP answers worth another try later: timeouts, rate limits, server trouble.
_RETRY_STATUSES = {408, 429}


class DeliveryError(UpstreamError):
    """A channel refused or could not be reached. ``retryable``: a later try
    may succeed (connection trouble, 408, 429, 5xx, a 4xx SMTP reply);
    ``retry_after``: seconds the receiver asked us to wait, if it said."""

    def __init__(self, detail: str, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.retryable = retryable
        self.retry_after = retry_after


def http_retryable(status: int) -> bool:
    return status in _RETRY_STATUSES or status >= 500


def retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds (delta-seconds or an HTTP date)."""
    value = (response.headers.get("Retry-After") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - utcnow()).total_seconds())


async def send_telegram(base_url: str, token: str | None, chat_id: str, text: str) -> None:
    """Send ``text``; longer than Telegram's limit it goes as several messages
    in order, split at paragraph, line or word boundaries (see ``split_text``)."""
    if not token:
        raise NotConfigured(
            "Telegram is not connected; connect it with POST /services/telegram/connect."
        )
    url = f"{base_url.rstrip('/')}/bot{token}/sendMessage"
    parts = split_text(text, TELEGRAM_LIMIT)
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as http:
            for n, part in enumerate(parts, 1):
                r = await http.post(url, json={"chat_id": chat_id, "text": part})
                if r.status_code >= 400:
                    reason = _json_field(r, "description") or f"HTTP {r.status_code}"
                    which = f" (part {n} of {len(parts)})" if len(parts) > 1 else ""
                    raise DeliveryError(
                        f"Telegram refused the message{which}: {reason}.",
                        http_retryable(r.status_code),
                        retry_after(r) or telegram_retry_after(r),
                    )
    except httpx.HTTPError as exc:
        raise DeliveryError(
            f"Telegram could not be reached: {type(exc).__name__}.", retryable=True
        ) from exc


def split_text(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters, preferring to
    cut between paragraphs, then between lines, then between words; only a
    single word longer than ``limit`` is cut inside. The whitespace at a cut
    is dropped, so joining the pieces with it gives back the text."""
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        cut, gap = _cut(rest, limit)
        piece = rest[:cut].rstrip()
        if piece:
            parts.append(piece)
        rest = rest[cut + gap :].lstrip() if gap else rest[cut:]
    if rest.strip() or not parts:
        parts.append(rest)
    return parts


def _cut(text: str, limit: int) -> tuple[int, int]:
    """Where to cut ``text`` (longer than ``limit``): (index, separator length)."""
    window = text[: limit + 1]  # a separator right at the limit still counts
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep, 1, limit + 1)
        if at > 0:
            return at, len(sep)
    # No boundary: one overlong word. Also try other whitespace (tabs, …).
    for i in range(limit, 0, -1):
        if window[i].isspace():
            return i, 1
    return limit, 0


async def send_webhook(url: str, payload: dict[str, Any]) -> None:
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as http:
            r = await http.post(url, json=payload)
    except httpx.HTTPError as exc:
        raise DeliveryError(
            f"The webhook {url} could not be reached: {type(exc).__name__}.", retryable=True
        ) from exc
    if r.status_code >= 400:
        raise DeliveryError(
            f"The webhook {url} answered HTTP {r.status_code}.",
            http_retryable(r.status_code),
            retry_after(r),
        )


async def send_email(settings: Settings, to: str, subject: str, text: str) -> None:
    if not settings.smtp_host:
        raise NotConfigured("E-mail is not configured; set FAMULUS_SMTP_HOST (and friends).")
    msg = EmailMessage()
    msg["From"] = settings.smtp_from or (settings.smtp_username or "famulus@localhost")
    msg["To"] = to
    msg["Subject"] = one_line(subject) or "famulus"
    stamp(msg)
    msg.set_content(text)
    try:
        await asyncio.to_thread(_smtp_send, settings, msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryError(
            f"The mail server refused or failed: {exc}.", _smtp_retryable(exc)
        ) from exc


def _smtp_retryable(exc: Exception) -> bool:
    """Connection trouble and 4xx replies are passing; a 5xx reply is final."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        return bool(codes) and all(400 <= code < 500 for code in codes)
    code = getattr(exc, "smtp_code", None)
    if isinstance(code, int):
        return 400 <= code < 500
    return True  # refused connection, timeout, disconnect


def stamp(msg: EmailMessage) -> None:
    """Add ``Date`` and ``Message-ID``: common spam filters reject or score
    down mail without them, and smtplib adds neither. The id's domain is the
    sender's, so no DNS look-up of this host is needed."""
    _, address = parseaddr(str(msg["From"] or ""))
    domain = address.rpartition("@")[2] if "@" in address else ""
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = make_msgid(domain=domain or "localhost")


def one_line(text: str, limit: int = 200) -> str:
    """``text`` as a single header-safe line: every run of whitespace and
    control characters becomes one space."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat[:limit]


def _smtp_send(settings: Settings, msg: EmailMessage) -> None:
    assert settings.smtp_host is not None
    cls = smtplib.SMTP_SSL if settings.smtp_ssl else smtplib.SMTP
    with cls(settings.smtp_host, settings.smtp_port, timeout=_TIMEOUT) as smtp:
        if settings.smtp_starttls and not settings.smtp_ssl:
            smtp.starttls()
        if settings.smtp_username and settings.smtp_password:
            smtp.login(settings.smtp_username, settings.smtp_password.get_secret_value())
        smtp.send_message(msg)


def telegram_retry_after(response: httpx.Response) -> float | None:
    """Telegram's 429 says how long to wait in ``parameters.retry_after``."""
    try:
        value = response.json().get("parameters", {}).get("retry_after")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None


def _json_field(response: httpx.Response, key: str) -> str | None:
    try:
        value = response.json().get(key)
    except (ValueError, AttributeError):
        return None
    return str(value) if value else None
