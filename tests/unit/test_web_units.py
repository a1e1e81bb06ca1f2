"""Unit tests of the web backends: ddgs hits, mode choice, page text, failures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.fake_web import ARTICLE, DDG_HOST, EXA_KEY, MOJEEK_HOST, WebState, web_server

from famulus.integrations import web
from famulus.integrations.web import (
    DuckDuckGoSearch,
    ExaSearch,
    SearchHit,
    WebError,
    ddgs_hits,
    fetch_page,
    format_hits,
    html_to_text,
    provider_for,
    unwrap_ddg_url,
)


@pytest.fixture
def fake() -> Iterator[WebState]:
    with web_server() as state:
        yield state


@pytest.mark.parametrize(
    ("href", "target"),
    [
        # as ddgs hands them on: percent-decoded, the target's own & unescaped
        (
            "//duckduckgo.com/l/?uddg=https://example.com/a?b=1&c=2&rut=ff",
            "https://example.com/a?b=1&c=2",
        ),
        ("https://duckduckgo.com/l/?uddg=http://x.org/", "http://x.org/"),
        ("/l/?kh=-1&uddg=https://y.net/p+q&rut=0a", "https://y.net/p+q"),
        (
            "https://plain.example/page?uddg=keep&rut=1",
            "https://plain.example/page?uddg=keep&rut=1",
        ),
        ("//duckduckgo.com/l/?rut=only", "https://duckduckgo.com/l/?rut=only"),
        (
            "https://evilduckduckgo.com/l/?uddg=https://x.org/",
            "https://evilduckduckgo.com/l/?uddg=https://x.org/",
        ),
    ],
)
def test_unwrap_ddg_redirects(href: str, target: str) -> None:
    assert unwrap_ddg_url(href) == target


def test_ddgs_rows_become_hits() -> None:
    rows = [
        {"title": "  About   Python ", "href": "https://python.org/", "body": "x" * 500},
        {"title": "", "href": "//duckduckgo.com/l/?uddg=https://t.example/&rut=1", "body": ""},
        {"title": "Ad", "href": "https://duckduckgo.com/y.js?ad_domain=a", "body": "buy"},
        {"title": "Mail", "href": "mailto:someone@example.com", "body": ""},
    ]
    hits = ddgs_hits(rows)
    assert [(h.title, h.url) for h in hits] == [
        ("About Python", "https://python.org/"),
        ("https://t.example/", "https://t.example/"),  # no title: the link stands in
    ]
    assert len(hits[0].snippet) == web.SNIPPET_CHARS and hits[0].snippet.endswith("…")


@pytest.mark.parametrize(
    ("mode", "key", "provider"),
    [
        ("auto", True, "exa"),
        ("auto", False, "ddgs"),
        ("exa", True, "exa"),
        ("exa", False, "none"),
        ("ddgs", True, "ddgs"),
        ("ddgs", False, "ddgs"),
        ("none", True, "none"),
        ("none", False, "none"),
    ],
)
def test_provider_for_mode(mode: str, key: bool, provider: str) -> None:
    assert provider_for(mode, key) == provider


def test_html_to_text_drops_scripts_and_styles() -> None:
    title, text = html_to_text(ARTICLE)
    assert title == "An article"
    assert text.splitlines()[:3] == ["Home", "", "Heading"]
    assert "First & foremost paragraph." in text
    assert "Second paragraph with a link." in text
    assert "- one\n- two" in text
    for hidden in ("secret", "color", "enable js", "var "):
        assert hidden not in text


def test_format_hits() -> None:
    hits = [SearchHit("T", "https://t.example", "snip", "2024-01-02"), SearchHit("U", "https://u")]
    assert format_hits("q", "exa", hits) == (
        "Web results for 'q' (via Exa):\n1. T\n   https://t.example\n   2024-01-02: snip\n"
        "2. U\n   https://u"
    )
    assert format_hits("q", "ddgs", []) == (
        "No web results for 'q' (via ddgs: DuckDuckGo, Mojeek, Brave, Yahoo)."
    )


def _keyless(fake: WebState) -> DuckDuckGoSearch:
    return DuckDuckGoSearch(proxy=fake.url, ca_file=fake.ca_file)


async def test_keyless_backend_asks_duckduckgo_first(fake: WebState) -> None:
    hits = await _keyless(fake).search("python", 2)
    assert [h.url for h in hits] == [
        "https://python.org/about/?a=1&b=2",
        "https://docs.example.org/direct?x=1&y=2",
    ]
    ddg = next(r for r in fake.requests if r.get("host") == DDG_HOST)
    assert ddg["form"]["q"] == "python" and ddg["path"] == "/html/"
    assert "Mozilla" in ddg["headers"]["user-agent"]  # ddgs poses as a browser


async def test_keyless_backend_falls_back_on_a_bot_check(fake: WebState) -> None:
    fake.ddg_status = 202
    hits = await _keyless(fake).search("python", 5)
    assert [h.title for h in hits] == ["Mojeek find"]
    assert any(r.get("host") == MOJEEK_HOST and r["query"] == "python" for r in fake.requests)


async def test_keyless_backend_failures_are_web_errors(fake: WebState) -> None:
    fake.fail_status = 500  # DuckDuckGo and Mojeek; the proxy refuses the others
    with pytest.raises(WebError, match=r"no search engine could be reached \(the last error: \w+"):
        await _keyless(fake).search("x", 5)
    refused = {r["path"] for r in fake.requests if r["method"] == "CONNECT"}
    assert refused >= {"search.brave.com:443", "search.yahoo.com:443"}


def test_keyless_backend_with_no_results_says_so() -> None:
    """ddgs's end when every engine answered but none with a hit (an empty page and
    a bot check look the same to it)."""
    message = str(web._ddgs_failure(Exception("No results found.")))
    assert message.startswith("no search engine returned results")
    assert "refused an automated search" in message


async def test_exa_bad_key_and_unreachable(fake: WebState) -> None:
    with pytest.raises(WebError, match=r"Exa answered HTTP 401 \(Invalid API key\)"):
        await ExaSearch(f"{fake.url}/exa", "wrong").search("x", 5)
    hits = await ExaSearch(f"{fake.url}/exa", EXA_KEY).search("x", 1)
    assert [h.title for h in hits] == ["Exa result one"]
    with pytest.raises(WebError, match="could not reach Exa"):
        await ExaSearch("http://127.0.0.1:9", EXA_KEY).search("x", 5)


async def test_fetch_page_extracts_text_after_redirect(fake: WebState) -> None:
    text = await fetch_page(f"{fake.url}/pages/moved", allow_private=True)
    assert text.startswith(f"URL: {fake.url}/pages/article\nTitle: An article\n\n")
    assert "First & foremost paragraph." in text and "secret" not in text


async def test_fetch_page_caps_size_and_length(fake: WebState) -> None:
    text = await fetch_page(f"{fake.url}/pages/big", allow_private=True, max_chars=1000)
    assert "x" * 1000 in text and "x" * 1001 not in text
    assert "only the first 2048 KB were read" in text
    assert "text truncated to 1000 characters" in text


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/pages/gone", "the page answered HTTP 404"),
        ("/pages/image", "is not a text page (image/png)"),
        ("/pages/loop", "more than 5 redirects"),
    ],
)
async def test_fetch_page_failures(fake: WebState, url: str, message: str) -> None:
    with pytest.raises(WebError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await fetch_page(fake.url + url, allow_private=True)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "http://127.0.0.1/",
        "http://localhost:6877/config",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]/",
    ],
)
async def test_fetch_page_refuses_non_http_and_local_targets(url: str) -> None:
    with pytest.raises(WebError):
        await fetch_page(url)


async def test_fetch_page_redirect_to_local_is_refused(
    fake: WebState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the first hop is allowed to be local here; the redirect target is checked too."""
    checked: list[str] = []
    original = web._pin

    async def first_hop_only(url: str, allow_private: bool) -> object:
        checked.append(url)
        return await original(url, allow_private=len(checked) == 1)

    monkeypatch.setattr(web, "_pin", first_hop_only)
    with pytest.raises(WebError, match="local or private address"):
        await fetch_page(f"{fake.url}/pages/moved")
    assert checked == [f"{fake.url}/pages/moved", f"{fake.url}/pages/article"]


def _rebinding_resolver(monkeypatch: pytest.MonkeyPatch, name: str, port: int) -> list[str]:
    """DNS for ``name`` that answers a public address first and loopback after."""
    import socket

    real = socket.getaddrinfo
    asked: list[str] = []

    def resolve(host: object, *args: object, **kwargs: object) -> object:
        text = host.decode() if isinstance(host, bytes) else host  # anyio asks in bytes
        if text != name:
            return real(host, *args, **kwargs)  # type: ignore[arg-type]
        asked.append(text)
        ip = "93.184.216.34" if len(asked) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return asked


async def test_dns_rebinding_cannot_reach_a_local_server(
    fake: WebState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The address checked is the address connected to: a second, private answer
    from DNS is never used (the public one is not reachable from the tests, so
    the fetch fails; before, it read the local server's page)."""
    port = int(fake.url.rsplit(":", 1)[1])
    asked = _rebinding_resolver(monkeypatch, "rebind.test", port)
    before = len(fake.requests)
    with pytest.raises(WebError, match="could not reach"):
        await fetch_page(f"http://rebind.test:{port}/pages/article")
    assert len(fake.requests) == before and asked == ["rebind.test"]


async def test_redirect_to_a_rebinding_name_is_refused(
    fake: WebState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each hop is resolved and checked: a redirect to a name whose (only) answer
    is private is refused before any connection."""
    monkeypatch.setattr(web, "_resolve", _private_for("inside.test", web._resolve))
    with pytest.raises(WebError, match="local or private address"):
        await web.fetch_page("http://inside.test/admin")


def _private_for(name: str, real: object) -> object:
    import ipaddress

    async def resolve(host: str, port: int) -> list[object]:
        if host == name:
            return [ipaddress.ip_address("10.1.2.3")]
        return await real(host, port)  # type: ignore[operator, no-any-return]

    return resolve


async def test_the_pinned_request_keeps_the_name_for_host_and_tls() -> None:
    hop = await web._pin("https://93.184.216.34:8443/a?b=1", allow_private=False)
    assert str(hop.url) == "https://93.184.216.34:8443/a?b=1"
    hop = await web._pin("http://[2606:4700::1]/x", allow_private=False)
    assert hop.headers == {"Host": "[2606:4700::1]"}


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("93.184.216.34", False),
        ("127.0.0.1", True),
        ("10.0.0.1", True),
        ("169.254.169.254", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # IPv4-mapped
        ("::ffff:93.184.216.34", False),  # mapped public: the public IPv4
        ("::127.0.0.1", True),  # the old IPv4-compatible form
        ("64:ff9b::7f00:1", True),  # NAT64 of 127.0.0.1
        ("64:ff9b::a00:1", True),  # NAT64 of 10.0.0.1
        ("64:ff9b::5db8:d822", False),  # NAT64 of a public address
        ("64:ff9b:1::1", True),  # local-use NAT64
        ("2002:7f00:1::", True),  # 6to4 of 127.0.0.1
        ("2002:c0a8:101::1", True),  # 6to4 of 192.168.1.1
        ("2002:5db8:d822::1", False),  # 6to4 of a public address
        ("2606:4700::1111", False),
        ("fe80::1", True),
        ("fc00::1", True),
    ],
)
def test_private_address_forms(address: str, refused: bool) -> None:
    import ipaddress

    assert web.address_refused(ipaddress.ip_address(address)) is refused
