"""One server per home: an exclusive lock on ``FAMULUS_HOME/famulus.lock``.

Two servers on one database would run two schedulers, two bot pollers and two
startup recoveries, and the second's recovery would mark the first's live runs
interrupted. ``flock`` is the right tool: the kernel drops it when the process
dies, even by kill -9, so a crash never leaves a stale lock behind. The file's
text names the holder (PID, address) only so a refused second server can say
who holds the home; the lock itself, not the text, is what counts.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class Holder:
    """What a running server wrote about itself into the lock file."""

    pid: int | None
    host: str | None
    port: int | None

    def describe(self) -> str:
        who = f"PID {self.pid}" if self.pid else "another process"
        if self.host is not None and self.port is not None:
            return f"{who}, listening on {self.host}:{self.port}"
        return who


class HomeInUse(Exception):
    """Another live process holds the home's lock."""

    def __init__(self, home: Path, holder: Holder) -> None:
        super().__init__(f"{home} is in use by a famulus server ({holder.describe()})")
        self.home = home
        self.holder = holder


class HomeLock:
    """Held for the life of the server process; never blocks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``HomeInUse``; writes nothing in the home but
        the lock file itself."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fh = os.fdopen(fd, "r+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fh)
            fh.close()
            raise HomeInUse(self.path.parent, holder) from None
        self._fh = fh
        self.describe(None, None)

    def describe(self, host: str | None, port: int | None) -> None:
        """Record who holds the lock (called again once the port is bound)."""
        if self._fh is None:
            return
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(json.dumps({"pid": os.getpid(), "host": host, "port": port}))
        self._fh.flush()

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing the descriptor drops the flock
            self._fh = None


def _read_holder(fh: IO[str]) -> Holder:
    try:
        fh.seek(0)
        data = json.loads(fh.read() or "{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid, host, port = data.get("pid"), data.get("host"), data.get("port")
    return Holder(
        pid=pid if isinstance(pid, int) else None,
        host=host if isinstance(host, str) else None,
        port=port if isinstance(port, int) else None,
    )
