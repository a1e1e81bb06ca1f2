"""Mail helpers that need no server: search queries, folder names, MIME text."""

from __future__ import annotations

import pytest

from famulus.errors import InvalidRequest
from famulus.integrations.mail import _parse, body_text, html_to_text, parse_query, quote_mailbox


def test_parse_query() -> None:
    assert parse_query("") == (["ALL"], None)
    assert parse_query('from:anna "blue door" since:2026-03-05 is:unread') == (
        ["FROM", '"anna"', "TEXT", '"blue door"', "SINCE", "5-Mar-2026", "UNSEEN"],
        None,
    )
    assert parse_query("subject:'a\"b\\c'") == (["SUBJECT", '"a\\"b\\\\c"'], None)
    assert parse_query("lunch subject:Grüße") == (
        ["TEXT", '"lunch"', "SUBJECT"],
        "Grüße".encode(),
    )
    assert parse_query('unbalanced "quote') == (["TEXT", '"unbalanced"', "TEXT", '"quote"'], None)
    with pytest.raises(InvalidRequest, match="YYYY-MM-DD"):
        parse_query("since:yesterday")
    with pytest.raises(InvalidRequest, match="non-ASCII"):
        parse_query("Grüße München")


def test_mailbox_names_use_modified_utf7() -> None:
    assert quote_mailbox("INBOX") == '"INBOX"'
    assert quote_mailbox("Entwürfe") == '"Entw&APw-rfe"'
    assert quote_mailbox("R&D") == '"R&-D"'
    assert quote_mailbox("日本語") == '"&ZeVnLIqe-"'
    assert quote_mailbox("a\r\nb") == '"ab"'


def test_html_to_text() -> None:
    html = "<html><head><title>T</title><style>x{}</style></head><body><p>One &amp; two</p><ul><li>a</li><li>b</li></ul><script>bad()</script></body></html>"
    text = html_to_text(html)
    assert "One & two" in text and "a\n" in text and "b" in text
    assert "bad" not in text and "x{}" not in text and "<" not in text


def test_unknown_charset_and_empty_bodies() -> None:
    raw = b"Subject: x\r\nContent-Type: text/plain; charset=x-nonsense\r\n\r\nhello \xff\r\n"
    text, attachments = body_text(_parse(raw))
    assert text.startswith("hello") and attachments == []
    only_attachment = (
        b"Subject: y\r\nMIME-Version: 1.0\r\nContent-Type: application/pdf; name=a.pdf\r\n"
        b"Content-Disposition: attachment; filename=a.pdf\r\n\r\nxx\r\n"
    )
    assert body_text(_parse(only_attachment)) == ("", ["a.pdf"])
