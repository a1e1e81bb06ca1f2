"""A real CalDAV server for tests: Radicale in a subprocess on loopback.

``radicale_server(folder)`` starts ``python -m radicale`` on a free port with
its storage in ``folder`` and no authentication (any login is accepted and
becomes the owner of ``/<login>/``), waits until it accepts connections, and
stops it afterwards. ``CalDav`` seeds and reads events with the ``caldav``
library, the same client the server uses.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import caldav

USER = "alice"
PASSWORD = "secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class CalDav:
    url: str

    def client(self) -> Any:
        return caldav.DAVClient(
            url=self.url, username=USER, password=PASSWORD, enable_rfc6764=False
        )

    @staticmethod
    def _calendar(client: Any, name: str) -> Any:
        principal = client.principal()
        for cal in principal.calendars():
            if cal.get_display_name() == name:
                return cal
        return principal.make_calendar(name=name)

    def make_calendar(self, name: str) -> None:
        with self.client() as client:
            self._calendar(client, name)

    def add(
        self,
        summary: str,
        start: datetime,
        end: datetime,
        *,
        location: str | None = None,
        description: str | None = None,
        rrule: dict[str, Any] | None = None,
        uid: str | None = None,
        calendar: str = "Work",
    ) -> str:
        uid = uid or f"{uuid.uuid4()}@test"
        fields: dict[str, Any] = {"uid": uid, "summary": summary, "dtstart": start, "dtend": end}
        if location:
            fields["location"] = location
        if description:
            fields["description"] = description
        if rrule:
            fields["rrule"] = rrule
        with self.client() as client:
            self._calendar(client, calendar).add_event(**fields)
        return uid

    def summaries(self) -> list[tuple[str, datetime, str | None]]:
        """(summary, start, location) of every event object on the server."""
        found = []
        with self.client() as client:
            for cal in client.principal().calendars():
                for obj in cal.events():
                    for comp in obj.icalendar_instance.walk("VEVENT"):
                        loc = comp.get("location")
                        found.append(
                            (
                                str(comp.get("summary")),
                                comp.get("dtstart").dt,
                                str(loc) if loc is not None else None,
                            )
                        )
        return found


@contextmanager
def radicale_server(folder: Path, timeout: float = 15.0) -> Iterator[CalDav]:
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "radicale",
        "--config",
        "",  # no system or user configuration files
        "--server-hosts",
        f"127.0.0.1:{port}",
        "--storage-filesystem-folder",
        str(folder / "collections"),
        "--auth-type",
        "none",
        "--auth-delay",
        "0",  # no back-off on the client's first, credential-less request
        "--logging-level",
        "error",
    ]
    log = (folder / "radicale.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"radicale exited with {proc.returncode}: "
                    + (folder / "radicale.log").read_text(errors="replace")[-2000:]
                )
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("radicale did not start") from None
                time.sleep(0.05)
        server = CalDav(f"http://127.0.0.1:{port}/")
        server.make_calendar("Work")  # the account's calendar
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
