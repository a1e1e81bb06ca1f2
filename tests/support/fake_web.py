"""A loopback server speaking the web-search subset famulus uses.

- ``POST /exa/search``: Exa's search (``x-api-key``; JSON ``query``,
  ``numResults``, ``contents.text.maxCharacters``) → ``{"results": [...]}``.
- An HTTP proxy (``CONNECT``) for the keyless search, which the ``ddgs`` library
  drives against the engines' real addresses: ``html.duckduckgo.com`` and
  ``www.mojeek.com`` are answered here over TLS, with a certificate from a test
  CA (``WebState.ca_file``, ddgs's ``verify``); every other host is refused, so
  nothing leaves the machine. DuckDuckGo's ``POST /html/`` (form ``q``) answers
  a result page as the real one is built (``.result__body`` blocks, one ad, one
  ``//duckduckgo.com/l/?uddg=`` redirect link); Mojeek's ``GET /search?q=``
  answers one hit.
- ``GET /pages/...``: plain pages for ``fetch_page`` (HTML, a redirect, a big
  page, a binary file).

``WebState`` switches failures on and records every request.
"""

from __future__ import annotations

import datetime
import json
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.support.local_http import LocalHTTPServer

EXA_KEY = "exa-good-key-123456"
DDG_HOST = "html.duckduckgo.com"
MOJEEK_HOST = "www.mojeek.com"
FAKED_HOSTS = (DDG_HOST, MOJEEK_HOST)


@dataclass
class WebState:
    url: str = ""  # also the proxy for the keyless search
    ca_file: str = ""  # the CA that signed the faked engines' certificate
    fail_status: int | None = None  # every search answers this status
    ddg_status: int | None = None  # DuckDuckGo alone answers this (202: its bot check)
    requests: list[dict[str, Any]] = field(default_factory=list)


def ddg_page(query: str) -> str:
    """A DuckDuckGo HTML result page: an ad, a direct link, a redirect link."""
    wrapped = quote("https://docs.example.org/direct?x=1&y=2", safe="")
    return f"""<!DOCTYPE html><html><head><title>{query} at DuckDuckGo</title>
<style>.result__a {{ color: blue }}</style></head><body>
<div class="result results_links results_links_deep result--ad">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a"
      href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">Buy things</a></h2>
    <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">An advert.</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a"
      href="https://python.org/about/?a=1&amp;b=2">About <b>Python</b></a></h2>
    <div class="result__extras"><a class="result__url" href="#">python.org/about</a></div>
    <a class="result__snippet" href="https://python.org/about/?a=1&amp;b=2">Python is a <b>programming</b> language &amp; more.</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a"
      href="//duckduckgo.com/l/?uddg={wrapped}&amp;rut=abc123">Direct link</a></h2>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg={wrapped}&amp;rut=abc123">Snippet <b>two</b> for {query}</a>
  </div>
</div>
</body></html>"""


def mojeek_page(query: str) -> str:
    """A Mojeek result page with one hit."""
    return f"""<!DOCTYPE html><html><head><title>{query} - Mojeek Search</title></head>
<body><ul class="results-standard">
<li class="r1"><a class="ob" href="https://mojeek.example/found">mojeek.example</a>
  <h2><a class="title" href="https://mojeek.example/found">Mojeek find</a></h2>
  <p class="s">A page the fake Mojeek found.</p></li>
</ul></body></html>"""


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


@cache
def _tls_files() -> tuple[str, str]:
    """(CA file, server certificate and key file) for the faked engines: a test CA
    made once per test process, never trusted outside it."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "famulus test CA")])
    ca = (
        _cert(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, DDG_HOST)])
    leaf = (
        _cert(name, ca_name, key.public_key(), now)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in FAKED_HOSTS]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder = Path(tempfile.mkdtemp(prefix="famulus-fake-web-"))
    ca_file, cert_file = folder / "ca.pem", folder / "server.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(
        leaf.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(ca_file), str(cert_file)


def _cert(
    subject: x509.Name, issuer: x509.Name, key: Any, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
    )


def _key_usage(ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


@contextmanager
def web_server(state: WebState | None = None) -> Iterator[WebState]:
    st = state or WebState()
    st.ca_file, cert_file = _tls_files()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file)

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
            if self._host() == DDG_HOST and self.path == "/html/":
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                st.requests.append(record | {"host": DDG_HOST, "form": form})
                status = st.fail_status or st.ddg_status
                if status:
                    return self._send(status, b"<html>anomaly</html>", "text/html")
                page = ddg_page(form.get("q", ""))
                return self._send(200, page.encode(), "text/html; charset=utf-8")
            self._json(404, {"error": "not found"})

        def _host(self) -> str:
            return (self.headers.get("Host") or "").split(":")[0]

        def do_CONNECT(self) -> None:  # noqa: N802
            """The proxy: faked engines get a TLS server here, the rest a refusal."""
            host = self.path.rsplit(":", 1)[0]
            st.requests.append({"method": "CONNECT", "path": self.path})
            self.close_connection = True
            if host not in FAKED_HOSTS:
                return self._send(403, b"", "text/plain")
            self.send_response(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            try:
                inner = tls.wrap_socket(self.connection, server_side=True)
            except (ssl.SSLError, OSError):
                return  # the client gave up on the handshake
            Handler(inner, self.client_address, self.server)  # serves the tunnel

        def do_GET(self) -> None:  # noqa: N802
            st.requests.append({"method": "GET", "path": self.path})
            if self._host() == MOJEEK_HOST and self.path.startswith("/search?"):
                query = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
                st.requests[-1] |= {"host": MOJEEK_HOST, "query": query}
                if st.fail_status:
                    return self._send(st.fail_status, b"<html>oops</html>", "text/html")
                return self._send(200, mojeek_page(query).encode(), "text/html; charset=utf-8")
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
