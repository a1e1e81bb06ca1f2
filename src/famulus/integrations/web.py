"""Web search and page fetching for the agent.

Two search backends sit behind one interface (``SearchBackend``):

- **Exa** (keyed): ``POST {exa_base_url}/search`` with ``x-api-key``; used when
  the ``web-search`` service is connected.
- **ddgs** (keyless, mode ``ddgs``): the ``ddgs`` metasearch library asks
  DuckDuckGo and Mojeek, then Brave and Yahoo while results are short (so a
  DuckDuckGo bot check is covered); it scrapes their result pages itself.

The mode (kv ``config.web_search``: ``auto``/``exa``/``ddgs``/``none``) picks the
backend: ``auto`` is Exa when its key is there, else ddgs. Every upstream
failure becomes a ``WebError`` whose message is meant for the model, so a tool
can hand it back as its result instead of crashing the run.

``fetch_page`` reads one http(s) page (size and time capped) and turns HTML into
plain text. It refuses addresses on the machine's own networks (loopback,
private, link-local, and their NAT64/6to4/mapped IPv6 forms) — also after each
redirect — so a page the agent reads cannot steer it into the local API or the
LAN. Each hop is resolved once and connected to at the address that was
checked, so DNS cannot answer "public" to the check and "private" to the
connection (rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

import httpx

from famulus import config_keys
from famulus.agent.outcome import failure
from famulus.agent.scope import used
from famulus.core import Core

MODES = ("auto", "exa", "ddgs", "none")
SEARCH_TIMEOUT_S = 15.0
FETCH_TIMEOUT_S = 20.0
FETCH_MAX_BYTES = 2 * 1024 * 1024
FETCH_MAX_CHARS = 20_000
MAX_REDIRECTS = 5
MAX_RESULTS = 10
SNIPPET_CHARS = 400
EXA_TEXT_CHARS = 1000
USER_AGENT = "Mozilla/5.0 (compatible; famulus/0.1; +https://github.com/famulus)"


class WebError(Exception):
    """An upstream failure, worded for the model."""


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str = ""
    published: str | None = None


class SearchBackend(Protocol):
    name: str

    async def search(self, query: str, num_results: int) -> list[SearchHit]: ...


def provider_for(mode: str, exa_key: bool) -> str:
    """The backend a mode uses: ``exa``, ``ddgs`` or ``none``."""
    if mode == "exa" or (mode == "auto" and exa_key):
        return "exa" if exa_key else "none"
    if mode in ("auto", "ddgs"):
        return "ddgs"
    return "none"


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _http_failure(name: str, exc: httpx.HTTPError, timeout: float) -> WebError:
    if isinstance(exc, httpx.TimeoutException):
        return WebError(f"{name} did not answer within {timeout:.0f} s.")
    return WebError(f"could not reach {name} ({type(exc).__name__}).")


def _status_failure(name: str, response: httpx.Response) -> WebError:
    reason = response.reason_phrase or "error"
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        message = body.get("error") or body.get("message")
        if isinstance(message, str) and message.strip():
            reason = message.strip()[:200]
    return WebError(f"{name} answered HTTP {response.status_code} ({reason}).")


# -- Exa ---------------------------------------------------------------------------


class ExaSearch:
    name = "exa"

    def __init__(self, base_url: str, api_key: str, timeout: float = SEARCH_TIMEOUT_S) -> None:
        self.url = base_url.rstrip("/") + "/search"
        self.api_key = api_key
        self.timeout = timeout

    async def search(self, query: str, num_results: int) -> list[SearchHit]:
        payload = {
            "query": query,
            "numResults": num_results,
            "contents": {"text": {"maxCharacters": EXA_TEXT_CHARS}},
        }
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as http:
                response = await http.post(
                    self.url, json=payload, headers={"x-api-key": self.api_key}
                )
        except httpx.HTTPError as exc:
            raise _http_failure("Exa", exc, self.timeout) from None
        if response.status_code >= 400:
            raise _status_failure("Exa", response)
        try:
            body = response.json()
        except ValueError:
            raise WebError("Exa sent an answer that is not JSON.") from None
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise WebError("Exa sent an answer without a result list.")
        return [hit for hit in map(_exa_hit, results) if hit is not None][:num_results]


def _exa_hit(item: Any) -> SearchHit | None:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        return None
    highlights = item.get("highlights")
    if isinstance(highlights, list) and highlights:
        snippet = " … ".join(str(h) for h in highlights)
    else:
        snippet = str(item.get("summary") or item.get("text") or "")
    published = item.get("publishedDate")
    return SearchHit(
        title=_squash(str(item.get("title") or "")) or item["url"],
        url=item["url"],
        snippet=_clip(_squash(snippet), SNIPPET_CHARS),
        published=str(published)[:10] if published else None,
    )


# -- keyless search (ddgs) ------------------------------------------------------------

# The engines ddgs may ask (its names: ours). It asks them two at a time in this
# order (DuckDuckGo with Mojeek first), merges what they find and stops once it has
# enough, so a DuckDuckGo bot check is covered by the others.
DDGS_ENGINES = {"duckduckgo": "DuckDuckGo", "mojeek": "Mojeek", "brave": "Brave", "yahoo": "Yahoo"}
DDGS_NAMES = ", ".join(DDGS_ENGINES.values())
DDGS_LABEL = f"ddgs: {DDGS_NAMES}"
DDGS_TIMEOUT_S = 10


def unwrap_ddg_url(href: str) -> str:
    """The target of a DuckDuckGo redirect link (``//duckduckgo.com/l/?uddg=…``).

    ddgs hands links on percent-decoded, so the target's own ``&`` are no longer
    escaped: the target is everything after ``uddg=`` up to DuckDuckGo's trailing
    ``&rut=`` token."""
    href = href.strip()
    if href.startswith("//"):
        href = "https:" + href
    elif href.startswith("/"):
        href = "https://duckduckgo.com" + href
    parts = urlsplit(href)
    host = (parts.hostname or "").lower()
    is_ddg = host == "duckduckgo.com" or host.endswith(".duckduckgo.com")
    if is_ddg and parts.path == "/l/" and "uddg=" in href:
        target = re.sub(r"&rut=[^&]*$", "", href.split("uddg=", 1)[1])
        if target:
            return target
    return href


def ddgs_hits(rows: list[dict[str, Any]]) -> list[SearchHit]:
    """ddgs result rows (``title``, ``href``, ``body``) as hits; links that lead
    nowhere useful (non-http(s), DuckDuckGo's own pages and ads) are dropped."""
    hits: list[SearchHit] = []
    for row in rows:
        url = unwrap_ddg_url(str(row.get("href") or ""))
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or host.endswith("duckduckgo.com"):
            continue
        title = _squash(str(row.get("title") or "")) or url
        snippet = _clip(_squash(str(row.get("body") or "")), SNIPPET_CHARS)
        hits.append(SearchHit(title=title, url=url, snippet=snippet))
    return hits


class DuckDuckGoSearch:
    """The keyless backend: the ``ddgs`` metasearch library (DuckDuckGo first).

    ``proxy`` and ``ca_file`` are ddgs's own ``proxy`` and ``verify`` options;
    left unset, ddgs goes straight out (or through ``DDGS_PROXY``). They come
    from the settings ``web_search_proxy`` and ``web_search_ca_file``; the tests
    set them to a loopback proxy that plays the engines over TLS with its own CA."""

    name = "ddgs"

    def __init__(
        self,
        *,
        proxy: str | None = None,
        ca_file: str | None = None,
        timeout: int = DDGS_TIMEOUT_S,
    ) -> None:
        self.proxy = proxy
        self.ca_file = ca_file
        self.timeout = timeout

    async def search(self, query: str, num_results: int) -> list[SearchHit]:
        # ddgs is blocking (its own thread pool, one request per engine).
        return await asyncio.to_thread(self._search, query, num_results)

    def _search(self, query: str, num_results: int) -> list[SearchHit]:
        # Imported here: ddgs loads every engine, lxml and primp (~0.35 s), which
        # only a keyless search needs, not every start of the server.
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException, TimeoutException

        client = DDGS(proxy=self.proxy, timeout=self.timeout, verify=self.ca_file or True)
        try:
            rows = client.text(query, max_results=num_results, backend=",".join(DDGS_ENGINES))
        except TimeoutException:
            raise WebError(f"the search engines did not answer within {self.timeout} s.") from None
        except DDGSException as exc:
            raise _ddgs_failure(exc) from None
        return ddgs_hits(rows)[:num_results]


def _ddgs_failure(exc: Exception) -> WebError:
    """ddgs ends with "No results found." when no engine answered 200 with results
    (an empty page and a bot check look the same to it), and with the last
    engine's error when one failed outright."""
    detail = str(exc).strip()
    if not detail or detail == "No results found.":
        return WebError(
            f"no search engine returned results ({DDGS_NAMES}): nothing matched, or "
            "they refused an automated search; try again later or rephrase."
        )
    kind = detail.split(":", 1)[0].strip()[:60]  # e.g. "ConnectError"; the rest is a long URL
    return WebError(f"no search engine could be reached (the last error: {kind}); try again later.")


# -- page fetching -------------------------------------------------------------------

_SKIP = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
    "footer", "nav", "main", "aside", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
    "blockquote", "hr", "dd", "dt", "figure", "figcaption", "form",
}  # fmt: skip


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
            if tag == "li":
                self.parts.append("- ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK and tag != "li":  # items stay on consecutive lines
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, readable text) of an HTML document; scripts and styles dropped."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    lines = (_squash(line) for line in "".join(parser.parts).split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return _squash("".join(parser.title_parts)), text


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # well-known prefix: IPv4 in the low 32 bits
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # local-use translation: never public
_V4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d form


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, 6to4, Teredo, NAT64, the
    old compatible form), if any: a private IPv4 reached that way is still private."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _V4_COMPATIBLE:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_refused(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True for anything but a public unicast address."""
    if not ip.is_global or ip.is_multicast:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL:
            return True
        embedded = _embedded_v4(ip)
        return embedded is not None and address_refused(embedded)
    return False


@dataclass(frozen=True)
class _Pinned:
    """One hop's request, aimed at the very address that was checked: the URL's
    host is replaced by the IP, while ``Host`` and TLS SNI (and so certificate
    verification) keep the name. A second DNS answer can never be used."""

    url: httpx.URL
    headers: dict[str, str]
    extensions: dict[str, Any]


async def _resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise WebError(f"the host {host!r} could not be resolved.") from None
    # An IPv6 answer may carry a zone (fe80::1%eth0); the address is what counts.
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


async def _pin(url: str, allow_private: bool) -> _Pinned:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebError(f"only http(s) URLs can be fetched, not {url[:200]!r}.")
    try:
        target = httpx.URL(url)
        port = target.port or (443 if target.scheme == "https" else 80)
    except (httpx.InvalidURL, ValueError):
        raise WebError(f"{url[:200]!r} is not a valid URL.") from None
    host = target.host
    addresses = await _resolve(host, port)
    if not addresses:
        raise WebError(f"the host {host!r} could not be resolved.")
    if not allow_private and any(address_refused(ip) for ip in addresses):
        raise WebError(f"{host!r} is a local or private address; it is not fetched.")
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    return _Pinned(
        url=target.copy_with(host=str(addresses[0])),
        headers={"Host": target.netloc.decode("ascii")},
        extensions=extensions,
    )


async def fetch_page(
    url: str,
    *,
    timeout: float = FETCH_TIMEOUT_S,
    max_bytes: int = FETCH_MAX_BYTES,
    max_chars: int = FETCH_MAX_CHARS,
    allow_private: bool = False,
) -> str:
    """A page as readable text, headed by its final URL and title.

    Every hop (the first URL and each redirect) is resolved once, checked, and
    connected to at the address checked (see ``_Pinned``)."""
    current = url.strip()
    try:
        async with httpx.AsyncClient(
            timeout=timeout, headers={"User-Agent": USER_AGENT}, follow_redirects=False
        ) as http:
            for _ in range(MAX_REDIRECTS + 1):
                hop = await _pin(current, allow_private)
                request = http.build_request(
                    "GET", hop.url, headers=hop.headers, extensions=hop.extensions
                )
                response = await http.send(request, stream=True)
                try:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise WebError(
                            f"the page answered HTTP {response.status_code} "
                            f"({response.reason_phrase or 'error'})."
                        )
                    body, cut = await _read_capped(response, max_bytes)
                    return _page_text(current, response, body, cut, max_chars)
                finally:
                    await response.aclose()
    except httpx.HTTPError as exc:
        raise _http_failure("the page", exc, timeout) from None
    raise WebError(f"more than {MAX_REDIRECTS} redirects.")


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False


def _page_text(url: str, response: httpx.Response, body: bytes, cut: bool, limit: int) -> str:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = body.decode(response.encoding or "utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml") or (
        not kind and raw.lstrip()[:100].lower().startswith(("<!doctype html", "<html"))
    ):
        title, text = html_to_text(raw)
    elif kind.startswith("text/") or kind in ("application/json", "application/xml") or not kind:
        title, text = "", raw.strip()
    else:
        raise WebError(f"{url} is not a text page ({kind}); it cannot be read.")
    notes = []
    if cut:
        notes.append(f"only the first {len(body) // 1024} KB were read")
    if len(text) > limit:
        text = text[:limit]
        notes.append(f"text truncated to {limit} characters")
    head = f"URL: {url}\n" + (f"Title: {title}\n" if title else "")
    tail = f"\n\n[{'; '.join(notes)}]" if notes else ""
    return f"{head}\n{text or '(no readable text)'}{tail}"


# -- the service the tools and GET /config use -----------------------------------------


class Credentials(Protocol):
    """Where the Exa key is found (``llm.service.LLMService``)."""

    async def service_credential(self, service: str) -> str | None: ...


class WebService:
    def __init__(self, core: Core, credentials: Credentials) -> None:
        self.c = core
        self.credentials = credentials

    async def mode(self) -> str:
        value = await self.c.kv.get(
            config_keys.WEB_SEARCH_MODE, config_keys.DEFAULTS[config_keys.WEB_SEARCH_MODE]
        )
        return str(value) if value in MODES else "auto"

    async def exa_key(self) -> str | None:
        return await self.credentials.service_credential("web-search")

    async def backend(self) -> SearchBackend | None:
        key = await self.exa_key()
        provider = provider_for(await self.mode(), key is not None)
        if provider == "exa" and key:
            return ExaSearch(self.c.settings.exa_base_url, key)
        if provider == "ddgs":
            settings = self.c.settings
            ca_file = str(settings.web_search_ca_file) if settings.web_search_ca_file else None
            return DuckDuckGoSearch(proxy=settings.web_search_proxy, ca_file=ca_file)
        return None

    async def search_text(self, query: str, num_results: int = 5) -> str:
        """The tool result: a numbered list, or a readable failure."""
        query = query.strip()
        if not query:
            return failure("Web search needs a non-empty query.")
        backend = await self.backend()
        if backend is None:
            return failure("Web search is not available (no search backend is configured).")
        n = max(1, min(MAX_RESULTS, int(num_results)))
        try:
            hits = await backend.search(query, n)
        except WebError as exc:
            return failure(f"Web search failed: {exc}")
        used("web")
        return format_hits(query, backend.name, hits)

    async def fetch_text(self, url: str) -> str:
        try:
            text = await fetch_page(url, allow_private=self.c.settings.fetch_allow_private)
        except WebError as exc:
            return failure(f"Could not fetch the page: {exc}")
        used("web")
        return text


def format_hits(query: str, provider: str, hits: list[SearchHit]) -> str:
    source = "Exa" if provider == "exa" else DDGS_LABEL
    if not hits:
        return f"No web results for {query!r} (via {source})."
    lines = [f"Web results for {query!r} (via {source}):"]
    for i, hit in enumerate(hits, 1):
        lines.append(f"{i}. {hit.title}")
        lines.append(f"   {hit.url}")
        snippet = f"{hit.published}: {hit.snippet}" if hit.published else hit.snippet
        if snippet:
            lines.append(f"   {snippet}")
    return "\n".join(lines)
