"""The one loopback HTTP server the tests' fakes run on.

Each fake (a code host, provider APIs, webhooks, web search, embeddings) only
writes a ``BaseHTTPRequestHandler`` for its protocol; binding, serving and
stopping live here so every fake binds only 127.0.0.1 on a port the kernel
picks (parallel tests never collide) and never outlives its test.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

# How often the serving loop checks for shutdown: stopping waits at most this
# long, so a short interval keeps the teardown of every test that uses a fake quick.
POLL_INTERVAL_S = 0.05


class LocalHTTPServer:
    """A threaded HTTP server on 127.0.0.1:<free port>, served from a daemon thread.

    The port is bound on construction, so ``url`` is known before ``start``;
    use it as a context manager (``with LocalHTTPServer(Handler) as server``)
    or call ``start``/``stop``. Each request runs in its own daemon thread, so
    a handler stuck on a client that went away cannot hang the test run.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(POLL_INTERVAL_S,), daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL, without a trailing slash: ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalHTTPServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port; safe before ``start`` and when called twice."""
        if self._thread.is_alive():
            # shutdown() waits for serve_forever to notice; it would wait forever
            # on a server that never started serving.
            self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LocalHTTPServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
