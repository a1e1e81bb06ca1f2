"""A loopback server speaking the web-search subset famulus uses.

- ``POST /exa/search``: Exa's search (``x-api-key``; JSON ``query``,
  ``numResults``, ``contents.text.maxCharacters``) → ``{"results": [...]}``.
- ``POST /ddg/html/``: DuckDuckGo's HTML endpoint (form ``q``) → a result page
  with ``a.result__a`` links through ``//duckduckgo.com/l/?uddg=`` redirects,
  ``.result__snippet`` texts and one ad that must be skipped.
- ``GET /pages/...``: plain pages for ``fetch_page`` (HTML, a redirect, a big
  page, a binary file).

``WebState`` switches failures on and records every request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote

from tests.support.local_http import LocalHTTPServer

EXA_KEY = "exa-good-key-123456"


@dataclass
class WebState:
    url: str = ""
    fail_status: int | None = None  # every search answers this status
    requests: list[dict[str, Any]] = field(default_factory=list)


def ddg_page(query: str) -> str:
    def link(target: str) -> str:
        return f"//duckduckgo.com/l/?uddg={quote(target, safe='')}&amp;rut=abc123"

    return f"""<!DOCTYPE html><html><head><title>{query} at DuckDuckGo</title>
<style>.result__a {{ color: blue }}</style></head><body>
<div class="result results_links result--ad">
  <h2 class="result__title"><a rel="nofollow" class="result__a"
    href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">Buy things</a></h2>
  <a class="result__snippet" href="#">An advert.</a>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a"
      href="{link("https://python.org/about/?a=1&b=2")}">About <b>Python</b></a></h2>
    <div class="result__extras"><a class="result__url" href="#">python.org/about</a></div>
    <a class="result__snippet" href="#">Python is a <b>programming</b> language &amp; more.</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a"
      href="https://docs.example.org/direct">Direct link</a></h2>
    <div class="result__snippet">Snippet <span>two</span> for {query}</div>
  </div>
</div>
</body></html>"""


EXA_RESULTS = [
    {
        "id": "https://exa.example/one",
        "title": "Exa result one",
        "url": "https://exa.example/one",
        "publishedDate": "2024-05-01T00:00:00.000Z",
        "author": "A. Writer",
        "text": "First result text from the fake Exa.",
    },
    {
        "id": "https://exa.example/two",
        "title": "Exa result two",
        "url": "https://exa.example/two",
        "publishedDate": None,
        "text": "Second\n\nresult   text.",
    },
]

ARTICLE = """<!DOCTYPE html><html><head><title>An article</title>
<script>var secret = "do not show";</script><style>body { color: red }</style></head>
<body><nav>Home</nav><h1>Heading</h1><p>First &amp; foremost paragraph.</p>
<p>Second paragraph with <a href="/x">a link</a>.</p><ul><li>one</li><li>two</li></ul>
<noscript>enable js</noscript></body></html>"""


@contextmanager
def web_server(state: WebState | None = None) -> Iterator[WebState]:
    st = state or WebState()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str, **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, body: Any) -> None:
            self._send(status, json.dumps(body).encode(), "application/json")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            record = {"method": "POST", "path": self.path, "headers": dict(self.headers)}
            if self.path == "/exa/search":
                body = json.loads(raw or b"null")
                st.requests.append(record | {"json": body})
                if self.headers.get("x-api-key") != EXA_KEY:
                    return self._json(401, {"error": "Invalid API key"})
                if st.fail_status:
                    return self._json(st.fail_status, {"error": "exa is having a bad day"})
                return self._json(200, {"results": EXA_RESULTS[: body["numResults"]]})
            if self.path == "/ddg/html/":
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                st.requests.append(record | {"form": form})
                if st.fail_status:
                    return self._send(st.fail_status, b"<html>oops</html>", "text/html")
                page = ddg_page(form.get("q", ""))
                return self._send(200, page.encode(), "text/html; charset=utf-8")
            self._json(404, {"error": "not found"})

        def do_GET(self) -> None:  # noqa: N802
            st.requests.append({"method": "GET", "path": self.path})
            if self.path == "/pages/article":
                return self._send(200, ARTICLE.encode(), "text/html; charset=utf-8")
            if self.path == "/pages/moved":
                return self._send(302, b"", "text/plain", Location="/pages/article")
            if self.path == "/pages/loop":
                return self._send(302, b"", "text/plain", Location="/pages/loop")
            if self.path == "/pages/big":
                return self._send(200, b"x" * (3 * 1024 * 1024), "text/plain")
            if self.path == "/pages/image":
                return self._send(200, b"\x89PNG\r\n", "image/png")
            if self.path == "/pages/gone":
                return self._send(404, b"<html>no</html>", "text/html")
            self._json(404, {"error": "not found"})

    with LocalHTTPServer(Handler) as server:
        st.url = server.url
        yield st
