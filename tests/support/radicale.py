"""A real CalDAV server for tests: Radicale in a subprocess on loopback.

``radicale_server(folder)`` starts ``python -m radicale`` on a free port with
its storage in ``folder`` and no authentication (any login is accepted and
becomes the owner of ``/<login>/``), waits until it accepts connections, and
stops it afterwards. ``CalDav`` seeds and reads events with plain WebDAV
requests (MKCALENDAR, PUT, PROPFIND, GET), independent of the server's client.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import icalendar

USER = "alice"
PASSWORD = "secret"
_MKCALENDAR = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop>'
    "<d:displayname>{name}</d:displayname>"
    '<c:supported-calendar-component-set><c:comp name="VEVENT"/>'
    "</c:supported-calendar-component-set></d:prop></d:set></c:mkcalendar>"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class CalDav:
    url: str

    def _http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(USER, PASSWORD), timeout=10)

    def make_calendar(self, name: str) -> None:
        with self._http() as http:
            http.request("PROPFIND", f"/{USER}/", headers={"Depth": "0"})  # creates the home
            r = http.request(
                "MKCALENDAR", f"/{USER}/{name.lower()}/", content=_MKCALENDAR.format(name=name)
            )
            assert r.status_code == 201, r.text

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
        cal = icalendar.Calendar()
        cal.add("prodid", "-//tests//radicale//EN")
        cal.add("version", "2.0")
        event = icalendar.Event()
        event.add("uid", uid)
        event.add("dtstamp", datetime.now(UTC))
        event.add("summary", summary)
        event.add("dtstart", start)
        event.add("dtend", end)
        if location:
            event.add("location", location)
        if description:
            event.add("description", description)
        if rrule:
            event.add("rrule", rrule)
        cal.add_component(event)
        with self._http() as http:
            r = http.put(
                f"/{USER}/{calendar.lower()}/{uuid.uuid4().hex}.ics",
                content=cal.to_ical(),
                headers={"Content-Type": "text/calendar"},
            )
            assert r.status_code == 201, r.text
        return uid

    def summaries(self, calendar: str = "Work") -> list[tuple[str, datetime, str | None]]:
        """(summary, start, location) of every event object in the calendar."""
        found = []
        with self._http() as http:
            r = http.request("PROPFIND", f"/{USER}/{calendar.lower()}/", headers={"Depth": "1"})
            hrefs = [
                (el.text or "").strip()
                for el in ET.fromstring(r.content).iter("{DAV:}href")
                if (el.text or "").strip().endswith(".ics")
            ]
            for href in hrefs:
                parsed = icalendar.Calendar.from_ical(http.get(href).content)
                for comp in parsed.walk("VEVENT"):
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
        "0",
        "--logging-level",
        "error",
    ]
    log = (folder / "radicale.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
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
