"""Collect a session's SSE events in a background thread while a test drives HTTP."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx
from tests.support.sse import SSEEvent, iter_events


class SSECollector:
    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        session_id: str,
        stream: bool = False,
        after: int = 0,
    ) -> None:
        self.events: list[SSEEvent] = []
        self.received_at: list[float] = []
        self._url = f"{base_url}/chat/events/{session_id}"
        self._params = {"stream": "true" if stream else "false", "after": str(after)}
        self._headers = headers
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._response: httpx.Response | None = None

    def __enter__(self) -> SSECollector:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        stream = self._response.extensions.get("network_stream") if self._response else None
        if stream is not None:
            try:  # shut the socket so the blocked reader thread returns now
                stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass
        self._thread.join(0.1)  # a reader blocked on a quiet stream ends with the server

    def _run(self) -> None:
        try:
            self._read()
        except (httpx.HTTPError, OSError, RuntimeError, AttributeError):
            pass  # the server went away (a test killed it) or the test ended
        finally:
            self._ready.set()

    def _read(self) -> None:
        with (
            httpx.Client(timeout=httpx.Timeout(5, read=None)) as http,
            http.stream("GET", self._url, params=self._params, headers=self._headers) as response,
        ):
            self._response = response
            self._ready.set()
            for event in iter_events(response):
                with self._lock:
                    self.events.append(event)
                    self.received_at.append(time.monotonic())
                if self._stop.is_set():
                    return

    def types(self) -> list[str]:
        with self._lock:
            return [e.event for e in self.events]

    def wait_for(
        self, type_: str, timeout: float = 10.0, count: int = 1, run_id: str | None = None
    ) -> SSEEvent:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = [
                    e
                    for e in self.events
                    if e.event == type_ and (run_id is None or e.data.get("run_id") == run_id)
                ]
            if len(found) >= count:
                return found[count - 1]
            time.sleep(0.005)
        raise AssertionError(f"no {type_} within {timeout}s; saw {self.types()}")

    def of(self, type_: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e.data for e in self.events if e.event == type_]
