"""The ``apprise`` notifier: one URL reaches ntfy, Gotify, Discord, Slack,
Matrix, Pushover and a hundred more services through the apprise library.

Such a URL usually embeds a token, so it is a secret: the notifier service
keeps it in the secrets file and shows only ``hint``. apprise reports a failed
send as a log line rather than an exception; an ``error=<HTTP status>`` in it
decides whether a later try may help (as for the webhook), and a failure
without a status (no connection, a timeout) counts as passing.

apprise loads every plugin when imported, so it is imported only when a URL
is checked or used, not when famulus starts.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from famulus.notify.senders import DeliveryError, http_retryable

_TIMEOUT = 15.0
_STATUS = re.compile(r"error=(\d{3})\b")
WIKI = "https://github.com/caronc/apprise/wiki"


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def check(url: str) -> str:
    """``url`` if apprise can use it, else ValueError saying why."""
    import apprise

    scheme = scheme_of(url)
    if not scheme:
        raise ValueError("must be an apprise URL such as ntfy://ntfy.sh/my-topic")
    if scheme not in apprise.NotificationManager().schemas():
        raise ValueError(f"'{scheme}://' is not a service apprise knows (see {WIKI})")
    with apprise.LogCapture(level=logging.WARNING) as captured:
        plugin = apprise.Apprise.instantiate(url)
    if plugin is None:
        raise ValueError(f"apprise cannot use this {scheme}:// URL: {_why(captured.getvalue())}")
    return url


def _why(log_text: str) -> str:
    """The first captured reason that does not repeat the (secret) URL."""
    for line in log_text.splitlines():
        reason = line.split(" - ", 2)[-1].strip()
        if reason and "://" not in reason:
            return reason.rstrip(".")
    return f"a part is missing or malformed (see {WIKI})"


def hint(url: str) -> str:
    """Enough of the URL to recognise it, not to use it: ``ntfy://…opic``."""
    scheme = scheme_of(url)
    rest = url[len(scheme) + 3 :] if scheme else url
    return f"{scheme}://…{rest[-4:]}" if len(rest) > 8 else f"{scheme}://…"


async def send(url: str, title: str, text: str) -> None:
    """Deliver through apprise; DeliveryError with apprise's reason when it fails."""
    import apprise

    notifier = apprise.Apprise()
    if not notifier.add(url):
        raise DeliveryError(
            f"apprise cannot use the stored {scheme_of(url)}:// URL; replace it with"
            " PATCH /notifiers/configs/<name>.",
            retryable=False,
        )
    result = await asyncio.to_thread(notifier.notify, body=text, title=title, timeout=_TIMEOUT)
    if result:
        return
    reason = _reason(result)
    status = _STATUS.search(reason)
    retryable = http_retryable(int(status.group(1))) if status else True
    raise DeliveryError(
        f"apprise could not deliver to {scheme_of(url)}://: {reason}", retryable=retryable
    )


def _reason(result: Any) -> str:
    lines = [
        str(entry.message).strip()
        for service in result
        for entry in service.logs()
        if str(entry.level) in ("WARNING", "ERROR", "CRITICAL")
    ]
    return " ".join(lines) or f"the service did not accept it ({result.status.name.lower()})"
