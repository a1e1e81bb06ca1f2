"""Reading the account's mailbox over IMAP (stdlib ``imaplib`` in a worker thread).

Every call opens its own connection, selects the folder read-only (``EXAMINE``)
and fetches with ``BODY.PEEK``, so nothing the agent reads is marked seen.
Failures become ``UpstreamError`` with a reason a person (or the model) can act on.
"""

from __future__ import annotations

import asyncio
import base64
import email
import email.policy
import imaplib
import re
import shlex
import ssl
from dataclasses import dataclass, field
from datetime import date
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from typing import Any

from famulus.errors import InvalidRequest, NotConfigured, NotFound, UpstreamError
from famulus.settings import Settings

TIMEOUT_S = 15.0
# A whole call (connect, log in, search, fetch) may take this long.
CALL_TIMEOUT_S = 60.0
MAX_LIMIT = 50
SNIPPET_CHARS = 200
BODY_CHARS = 20_000
# Bytes fetched per message: for a list only the start is needed for a snippet;
# reading one message stops at this size (the text parts come first in practice).
SNIPPET_FETCH_BYTES = 16_384
READ_FETCH_BYTES = 2_000_000

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_KEYS = {"from": "FROM", "to": "TO", "cc": "CC", "subject": "SUBJECT", "body": "BODY"}


@dataclass
class MailSummary:
    uid: str
    from_: str
    to: str
    subject: str
    date: str
    snippet: str
    unread: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "from": self.from_,
            "to": self.to,
            "subject": self.subject,
            "date": self.date,
            "unread": self.unread,
            "snippet": self.snippet,
        }


@dataclass
class MailMessage:
    uid: str
    folder: str
    from_: str
    to: str
    cc: str
    subject: str
    date: str
    body: str
    truncated: bool = False
    attachments: list[str] = field(default_factory=list)

    def as_text(self) -> str:
        lines = [
            f"UID: {self.uid} (folder {self.folder})",
            f"From: {self.from_}",
            f"To: {self.to}",
        ]
        if self.cc:
            lines.append(f"Cc: {self.cc}")
        lines += [f"Date: {self.date}", f"Subject: {self.subject}"]
        if self.attachments:
            lines.append("Attachments: " + ", ".join(self.attachments))
        lines += ["", self.body or "(no text)"]
        if self.truncated:
            lines.append(f"\n[… truncated to {BODY_CHARS} characters]")
        return "\n".join(lines)


class MailClient:
    """IMAP access for the configured account."""

    def __init__(self, settings: Settings) -> None:
        if not (settings.imap_host and settings.account_username and settings.account_password):
            raise NotConfigured(
                "Mail is not configured; set FAMULUS_IMAP_HOST, FAMULUS_ACCOUNT_USERNAME "
                "and FAMULUS_ACCOUNT_PASSWORD."
            )
        self.host = settings.imap_host
        self.port = settings.imap_port
        self.use_ssl = settings.imap_ssl
        self.username = settings.account_username
        self.password = settings.account_password.get_secret_value()

    async def search(
        self, query: str = "", limit: int = 10, folder: str = "INBOX"
    ) -> list[MailSummary]:
        """Messages matching ``query`` in ``folder``, newest first."""
        criteria, literal = parse_query(query)
        limit = max(1, min(limit, MAX_LIMIT))
        return await self._call(self._search, criteria, literal, limit, folder)

    async def read(self, uid: str, folder: str = "INBOX") -> MailMessage:
        uid = uid.strip()
        if not uid.isdigit():
            raise NotFound(f"{uid!r} is not a message uid (a number from search_mail).")
        return await self._call(self._read, uid, folder)

    async def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.wait_for(asyncio.to_thread(fn, *args), CALL_TIMEOUT_S)
        except TimeoutError as exc:
            raise UpstreamError(
                f"The mail server {self.host} did not answer within {CALL_TIMEOUT_S:.0f} s."
            ) from exc

    # -- in the worker thread ------------------------------------------------

    def _connect(self, folder: str) -> imaplib.IMAP4:
        try:
            if self.use_ssl:
                imap: imaplib.IMAP4 = imaplib.IMAP4_SSL(
                    self.host,
                    self.port,
                    ssl_context=ssl.create_default_context(),
                    timeout=TIMEOUT_S,
                )
            else:
                imap = imaplib.IMAP4(self.host, self.port, timeout=TIMEOUT_S)
        except (OSError, imaplib.IMAP4.error) as exc:
            raise UpstreamError(
                f"Could not connect to the mail server {self.host}:{self.port}: {_reason(exc)}."
            ) from exc
        try:
            try:
                imap.login(self.username, self.password)
            except imaplib.IMAP4.error as exc:
                raise UpstreamError(
                    f"The mail server refused the login for {self.username}: {_reason(exc)}."
                ) from exc
            status, data = imap.select(quote_mailbox(folder), readonly=True)
            if status != "OK":
                raise NotFound(f"There is no mail folder {folder!r} ({_text(data)}).")
        except BaseException:
            _close(imap)
            raise
        return imap

    def _search(
        self, criteria: list[str], literal: bytes | None, limit: int, folder: str
    ) -> list[MailSummary]:
        imap = self._connect(folder)
        try:
            if literal is not None:
                imap.literal = literal  # type: ignore[attr-defined,assignment]
                status, data = imap.uid("SEARCH", "CHARSET", "UTF-8", *criteria)
            else:
                status, data = imap.uid("SEARCH", *criteria)
            if status != "OK":
                raise UpstreamError(f"The mail server refused the search: {_text(data)}.")
            uids = _text(data).split()
            uids = sorted(uids, key=int)[-limit:][::-1]
            if not uids:
                return []
            status, data = imap.uid(
                "FETCH",
                ",".join(uids),
                f"(FLAGS BODY.PEEK[]<0.{SNIPPET_FETCH_BYTES}>)",
            )
            if status != "OK":
                raise UpstreamError(f"The mail server refused the fetch: {_text(data)}.")
            found: dict[str, MailSummary] = {}
            for meta, raw in _fetched(data):
                uid = _fetch_item(meta, "UID")
                if uid is None:
                    continue
                msg = _parse(raw)
                text, _ = body_text(msg)
                found[uid] = MailSummary(
                    uid=uid,
                    from_=_header(msg, "From"),
                    to=_header(msg, "To"),
                    subject=_header(msg, "Subject"),
                    date=_date(msg),
                    snippet=_snippet(text),
                    unread=b"\\Seen" not in meta,
                )
            return [found[u] for u in uids if u in found]
        except (OSError, imaplib.IMAP4.error) as exc:
            raise UpstreamError(f"The mail server failed: {_reason(exc)}.") from exc
        finally:
            _close(imap)

    def _read(self, uid: str, folder: str) -> MailMessage:
        imap = self._connect(folder)
        try:
            status, data = imap.uid("FETCH", uid, f"(BODY.PEEK[]<0.{READ_FETCH_BYTES}>)")
            if status != "OK":
                raise UpstreamError(f"The mail server refused the fetch: {_text(data)}.")
            parts = list(_fetched(data))
            if not parts:
                raise NotFound(f"There is no message with uid {uid} in {folder}.")
            msg = _parse(parts[0][1])
            text, attachments = body_text(msg)
            return MailMessage(
                uid=uid,
                folder=folder,
                from_=_header(msg, "From"),
                to=_header(msg, "To"),
                cc=_header(msg, "Cc"),
                subject=_header(msg, "Subject"),
                date=_date(msg),
                body=text[:BODY_CHARS],
                truncated=len(text) > BODY_CHARS,
                attachments=attachments,
            )
        except (OSError, imaplib.IMAP4.error) as exc:
            raise UpstreamError(f"The mail server failed: {_reason(exc)}.") from exc
        finally:
            _close(imap)


# -- search queries ------------------------------------------------------------


def parse_query(query: str) -> tuple[list[str], bytes | None]:
    """Turn a query into IMAP SEARCH criteria.

    Plain words match anywhere in the message (``TEXT``); ``from:``, ``to:``,
    ``cc:``, ``subject:``, ``body:`` narrow to a field; ``since:`` and
    ``before:`` take a date (YYYY-MM-DD); ``is:unread`` / ``is:read`` filter by
    the seen flag. Double quotes group words into one phrase. imaplib sends at
    most one literal per command, so at most one term may contain non-ASCII
    text; it goes last, as a UTF-8 literal.
    """
    try:
        words = shlex.split(query)
    except ValueError:
        words = query.replace('"', " ").split()
    criteria: list[str] = []
    literal: bytes | None = None
    literal_key = "TEXT"
    for word in words:
        key, sep, value = word.partition(":")
        key = key.lower()
        if sep and key in ("since", "before"):
            criteria += [key.upper(), _imap_date(value)]
            continue
        if sep and key == "is" and value.lower() in ("unread", "unseen", "read", "seen"):
            criteria.append("UNSEEN" if value.lower() in ("unread", "unseen") else "SEEN")
            continue
        if sep and key in _KEYS and value:
            name, term = _KEYS[key], value
        else:
            name, term = "TEXT", word
        term = term.replace("\r", " ").replace("\n", " ")
        if term.isascii():
            criteria += [name, _quote(term)]
        elif literal is None:
            literal = term.encode("utf-8")
            literal_key = name
        else:
            raise InvalidRequest("Only one search term may contain non-ASCII characters.")
    if literal is not None:
        criteria.append(literal_key)  # the literal itself follows this key
    return criteria or ["ALL"], literal


def _imap_date(value: str) -> str:
    try:
        d = date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidRequest(f"{value!r} is not a date; write it as YYYY-MM-DD.") from exc
    return f"{d.day}-{_MONTHS[d.month - 1]}-{d.year}"


def _quote(term: str) -> str:
    return '"' + term.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_mailbox(name: str) -> str:
    """A folder name as an IMAP astring, in modified UTF-7 (RFC 3501 5.1.3)."""
    name = name.strip().replace("\r", "").replace("\n", "") or "INBOX"
    return _quote(_utf7_imap(name))


def _utf7_imap(name: str) -> str:
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            raw = "".join(pending).encode("utf-16-be")
            out.append("&" + base64.b64encode(raw).decode().rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for ch in name:
        if 0x20 <= ord(ch) <= 0x7E:
            flush()
            out.append("&-" if ch == "&" else ch)
        else:
            pending.append(ch)
    flush()
    return "".join(out)


# -- messages ------------------------------------------------------------------


def _fetched(data: list[Any]) -> list[tuple[bytes, bytes]]:
    """(metadata, literal) pairs from an imaplib FETCH answer."""
    return [
        (item[0], item[1])
        for item in data
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], bytes)
    ]


def _fetch_item(meta: bytes, name: str) -> str | None:
    m = re.search(rb"\b" + name.encode() + rb" (\d+)", meta)
    return m.group(1).decode() if m else None


def _parse(raw: bytes) -> EmailMessage:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
        return " ".join(str(value).split()) if value is not None else ""
    except Exception:  # a malformed header must not hide the rest of the message
        return ""


def _date(msg: Message) -> str:
    raw = _header(msg, "Date")
    try:
        return parsedate_to_datetime(raw).isoformat()
    except (TypeError, ValueError, IndexError):
        return raw


def body_text(msg: EmailMessage) -> tuple[str, list[str]]:
    """The message's readable text (text/plain preferred, else HTML as text)
    and the names of its attachments."""
    attachments = []
    for item in msg.walk():
        if item.is_multipart():
            continue
        if item.get_content_disposition() == "attachment" or (
            item.get_filename() and item.get_content_maintype() != "text"
        ):
            attachments.append(item.get_filename() or item.get_content_type())
    part: Message | None
    try:
        part = msg.get_body(preferencelist=("plain", "html"))
    except Exception:
        part = None
    if part is None:
        # Some senders put the text in a part the policy does not see as a body.
        part = next(
            (
                p
                for p in msg.walk()
                if p.get_content_type() in ("text/plain", "text/html")
                and p.get_content_disposition() != "attachment"
            ),
            None,
        )
    if part is None:
        return "", attachments
    text = _decode(part)
    if part.get_content_subtype() == "html":
        text = html_to_text(text)
    return _tidy(text), attachments


def _decode(part: Message) -> str:
    try:
        content = part.get_content()  # type: ignore[attr-defined]
        if isinstance(content, str):
            return content
    except (LookupError, ValueError, AssertionError, UnicodeError):
        pass
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("utf-8", errors="replace")


def _tidy(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


_BLOCK_TAGS = {
    "br",
    "p",
    "div",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "table",
    "ul",
    "ol",
    "hr",
}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.out.append(data)


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        return re.sub(r"<[^>]+>", " ", html)
    lines = (" ".join(line.split()) for line in "".join(parser.out).split("\n"))
    return "\n".join(lines)


# -- helpers -------------------------------------------------------------------


def _text(data: Any) -> str:
    parts = []
    for item in data or []:
        if isinstance(item, bytes):
            parts.append(item.decode("utf-8", "replace"))
        elif isinstance(item, tuple):
            parts.append(
                " ".join(x.decode("utf-8", "replace") for x in item if isinstance(x, bytes))
            )
    return " ".join(parts).strip()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    text = str(exc).strip()
    if text.startswith("b'") or text.startswith('b"'):
        text = text[2:-1]
    return text or type(exc).__name__


def _close(imap: imaplib.IMAP4) -> None:
    try:
        imap.logout()
    except Exception:
        try:
            imap.shutdown()
        except Exception:
            pass
