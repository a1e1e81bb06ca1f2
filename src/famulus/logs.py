"""Log setup for ``famulus serve``: one format for famulus's and uvicorn's loggers.

uvicorn normally installs its own handlers (no timestamps, its own layout);
``serve`` passes ``log_config=None`` so uvicorn's loggers propagate to the root
handler set up here, and every line, access lines included, reads the same.
``json`` writes one object per line for people who ship logs to a collector.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# uvicorn's own TRACE level sits below DEBUG.
TRACE = 5


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message"[, "exc"]}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure(level: str, fmt: str) -> None:
    """Route every logger through one stderr handler in the chosen format."""
    logging.addLevelName(TRACE, "TRACE")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(TRACE if level.lower() == "trace" else level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uv = logging.getLogger(name)
        uv.handlers.clear()
        uv.propagate = True
