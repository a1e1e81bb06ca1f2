"""Delivery over each channel. Every failure becomes UpstreamError with the reason,
so the API can answer 502 and an automation run can record why it failed."""

from __future__ import annotations

import asyncio
import smtplib
from email.message import EmailMessage
from typing import Any

import httpx

from famulus.errors import NotConfigured, UpstreamError
from famulus.settings import Settings

_TIMEOUT = 15.0
TELEGRAM_LIMIT = 4096


async def send_telegram(base_url: str, token: str | None, chat_id: str, text: str) -> None:
    if not token:
        raise NotConfigured(
            "Telegram is not connected; connect it with POST /services/telegram/connect."
        )
    url = f"{base_url.rstrip('/')}/bot{token}/sendMessage"
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as http:
            r = await http.post(url, json={"chat_id": chat_id, "text": text[:TELEGRAM_LIMIT]})
    except httpx.HTTPError as exc:
        raise UpstreamError(f"Telegram could not be reached: {type(exc).__name__}.") from exc
    if r.status_code >= 400:
        reason = _json_field(r, "description") or f"HTTP {r.status_code}"
        raise UpstreamError(f"Telegram refused the message: {reason}.")


async def send_webhook(url: str, payload: dict[str, Any]) -> None:
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as http:
            r = await http.post(url, json=payload)
    except httpx.HTTPError as exc:
        raise UpstreamError(
            f"The webhook {url} could not be reached: {type(exc).__name__}."
        ) from exc
    if r.status_code >= 400:
        raise UpstreamError(f"The webhook {url} answered HTTP {r.status_code}.")


async def send_email(settings: Settings, to: str, subject: str, text: str) -> None:
    if not settings.smtp_host:
        raise NotConfigured("E-mail is not configured; set FAMULUS_SMTP_HOST (and friends).")
    msg = EmailMessage()
    msg["From"] = settings.smtp_from or (settings.smtp_username or "famulus@localhost")
    msg["To"] = to
    msg["Subject"] = subject
    msg.set_content(text)
    try:
        await asyncio.to_thread(_smtp_send, settings, msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise UpstreamError(f"The mail server refused or failed: {exc}.") from exc


def _smtp_send(settings: Settings, msg: EmailMessage) -> None:
    assert settings.smtp_host is not None
    cls = smtplib.SMTP_SSL if settings.smtp_ssl else smtplib.SMTP
    with cls(settings.smtp_host, settings.smtp_port, timeout=_TIMEOUT) as smtp:
        if settings.smtp_starttls and not settings.smtp_ssl:
            smtp.starttls()
        if settings.smtp_username and settings.smtp_password:
            smtp.login(settings.smtp_username, settings.smtp_password.get_secret_value())
        smtp.send_message(msg)


def _json_field(response: httpx.Response, key: str) -> str | None:
    try:
        value = response.json().get(key)
    except (ValueError, AttributeError):
        return None
    return str(value) if value else None
