"""Keep credentials that travel in URLs out of the HTTP client logs.

Two protocols put the secret in the URL itself: Telegram (``/bot<token>/``)
and Google's key parameter (``?key=``). The HTTP client libraries log request
URLs at INFO, so their loggers get a filter that masks those parts.
"""

from __future__ import annotations

import logging
import re

_PATTERNS = (
    re.compile(r"(/bot)[^/\s\"']+"),
    re.compile(r"([?&]key=)[^&\s\"']+"),
)
_LOGGERS = ("httpx", "httpx2", "httpcore", "urllib3")


def redact(text: str) -> str:
    for pattern in _PATTERNS:
        text = pattern.sub(r"\1[redacted]", text)
    return text


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = RedactSecrets()


def install_log_redaction() -> None:
    """Idempotent: adding the same filter object twice is a no-op."""
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(_FILTER)
