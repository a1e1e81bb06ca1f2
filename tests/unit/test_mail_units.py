"""Mail helpers that need no server: search queries and message text.

Folder names (modified UTF-7) are imap-tools' and are checked against Dovecot in
tests/api/test_mail.py."""

from __future__ import annotations

import pytest
from imap_tools import MailMessage as ImapMessage

from famulus.errors import InvalidRequest
from famulus.integrations.mail import body_text, html_to_text, parse_query


def test_parse_query() -> None:
    assert parse_query("") == ("ALL", None)
    assert parse_query('from:anna "blue door" since:2026-03-05 is:unread') == (
        '(SINCE 5-Mar-2026 FROM "anna" UNSEEN TEXT "blue door")',
        None,
    )
    assert parse_query("subject:'a\"b\\c'") == ('(SUBJECT "a\\"b\\\\c")', None)
    # a non-ASCII term goes last, as a UTF-8 literal after its key
    assert parse_query("lunch subject:Grüße") == ('(TEXT "lunch") SUBJECT', "Grüße".encode())
    assert parse_query("from:Jörg") == ("FROM", "Jörg".encode())
    assert parse_query('unbalanced "quote') == ('(TEXT "quote" TEXT "unbalanced")', None)
    assert parse_query("to:a cc:b body:c before:2026-01-02 is:read") == (
        '(BODY "c" CC "b" BEFORE 2-Jan-2026 SEEN TO "a")',
        None,
    )
    with pytest.raises(InvalidRequest, match="YYYY-MM-DD"):
        parse_query("since:yesterday")
    with pytest.raises(InvalidRequest, match="non-ASCII"):
        parse_query("Grüße München")


def test_a_line_break_cannot_end_the_search_command() -> None:
    criteria, literal = parse_query('"a\r\nA1 DELETE INBOX"')
    assert criteria == '(TEXT "a  A1 DELETE INBOX")' and literal is None
    assert "\r" not in criteria and "\n" not in criteria


def test_html_to_text() -> None:
    html = "<html><head><title>T</title><style>x{}</style></head><body><p>One &amp; two</p><ul><li>a</li><li>b</li></ul><script>bad()</script></body></html>"
    text = html_to_text(html)
    assert "One & two" in text and "a\n" in text and "b" in text
    assert "bad" not in text and "x{}" not in text and "<" not in text


def test_unknown_charset_and_empty_bodies() -> None:
    raw = b"Subject: x\r\nContent-Type: text/plain; charset=x-nonsense\r\n\r\nhello \xff\r\n"
    text, attachments = body_text(ImapMessage.from_bytes(raw))
    assert text.startswith("hello") and attachments == []
    only_attachment = (
        b"Subject: y\r\nMIME-Version: 1.0\r\nContent-Type: application/pdf; name=a.pdf\r\n"
        b"Content-Disposition: attachment; filename=a.pdf\r\n\r\nxx\r\n"
    )
    assert body_text(ImapMessage.from_bytes(only_attachment)) == ("", ["a.pdf"])
