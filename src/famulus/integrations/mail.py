"""Reading the account's mailbox over IMAP (``imap-tools`` in a worker thread).

imap-tools logs in, builds the SEARCH criteria, encodes folder names (modified
UTF-7) and parses messages (MIME parts, RFC 2047 headers, charsets); this module
maps the agent's query syntax onto it and keeps every read read-only: each call
opens its own connection, selects the folder read-only (``EXAMINE``) and fetches
with ``BODY.PEEK``, so nothing the agent reads is marked seen. Failures become
``UpstreamError`` with a reason a person (or the model) can act on.
"""

from __future__ import annotations

import asyncio
import imaplib
import re
import shlex
import ssl
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from imap_tools import AND, BaseMailBox, MailBox, MailBoxUnencrypted
from imap_tools import MailMessage as ImapMessage
from imap_tools.consts import DEFAULT_EMAIL_DATE
from imap_tools.errors import MailboxFolderSelectError, UnexpectedCommandStatusError

from famulus.errors import InvalidRequest, NotConfigured, NotFound, UpstreamError
from famulus.integrations.web import html_to_text as _page_text
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

# query prefix -> imap-tools AND() keyword
_FIELDS = {"from": "from_", "to": "to", "cc": "cc", "subject": "subject", "body": "body"}
_SEEN = {"unread": False, "unseen": False, "read": True, "seen": True}


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

    def _connect(self, folder: str) -> BaseMailBox:
        box: BaseMailBox
        try:
            if self.use_ssl:
                box = MailBox(
                    self.host,
                    self.port,
                    timeout=TIMEOUT_S,
                    ssl_context=ssl.create_default_context(),
                )
            else:
                box = MailBoxUnencrypted(self.host, self.port, timeout=TIMEOUT_S)
        except (OSError, imaplib.IMAP4.error) as exc:
            raise UpstreamError(
                f"Could not connect to the mail server {self.host}:{self.port}: {_reason(exc)}."
            ) from exc
        try:
            try:
                box.login(self.username, self.password, initial_folder=None)
            except (UnexpectedCommandStatusError, imaplib.IMAP4.error) as exc:
                raise UpstreamError(
                    f"The mail server refused the login for {self.username}: {_reason(exc)}."
                ) from exc
            name = folder.strip() or "INBOX"  # imap-tools encodes it (modified UTF-7, quoted)
            try:
                box.folder.set(name, readonly=True)  # EXAMINE
            except MailboxFolderSelectError as exc:
                raise NotFound(f"There is no mail folder {folder!r} ({_reason(exc)}).") from exc
        except BaseException:
            _close(box)
            raise
        return box

    def _search(
        self, criteria: str, literal: bytes | None, limit: int, folder: str
    ) -> list[MailSummary]:
        box = self._connect(folder)
        try:
            if literal is not None:
                box.client.literal = literal  # type: ignore[attr-defined,assignment]  # sent last
                uids = box.uids(criteria, "UTF-8")
            else:  # no CHARSET at all: some servers refuse an explicit US-ASCII
                uids = box.uids(criteria, None)
            uids = sorted(uids, key=int)[-limit:][::-1]
            if not uids:
                return []
            found: dict[str, MailSummary] = {}
            for msg in _fetch(box, uids, SNIPPET_FETCH_BYTES):
                if msg.uid is None:
                    continue
                text, _ = body_text(msg)
                found[msg.uid] = MailSummary(
                    uid=msg.uid,
                    from_=_addresses(msg.from_values),
                    to=_addresses(*msg.to_values),
                    subject=_squash(msg.subject),
                    date=_date(msg),
                    snippet=_snippet(text),
                    unread="\\Seen" not in msg.flags,
                )
            return [found[u] for u in uids if u in found]
        except UnexpectedCommandStatusError as exc:
            raise UpstreamError(f"The mail server refused the search: {_reason(exc)}.") from exc
        except (OSError, imaplib.IMAP4.error) as exc:
            raise UpstreamError(f"The mail server failed: {_reason(exc)}.") from exc
        finally:
            _close(box)

    def _read(self, uid: str, folder: str) -> MailMessage:
        box = self._connect(folder)
        try:
            messages = _fetch(box, [uid], READ_FETCH_BYTES)
            if not messages:
                raise NotFound(f"There is no message with uid {uid} in {folder}.")
            msg = messages[0]
            text, attachments = body_text(msg)
            return MailMessage(
                uid=uid,
                folder=folder,
                from_=_addresses(msg.from_values),
                to=_addresses(*msg.to_values),
                cc=_addresses(*msg.cc_values),
                subject=_squash(msg.subject),
                date=_date(msg),
                body=text[:BODY_CHARS],
                truncated=len(text) > BODY_CHARS,
                attachments=attachments,
            )
        except (OSError, imaplib.IMAP4.error) as exc:
            raise UpstreamError(f"The mail server failed: {_reason(exc)}.") from exc
        finally:
            _close(box)


def _fetch(box: BaseMailBox, uids: list[str], max_bytes: int) -> list[ImapMessage]:
    """The messages' first ``max_bytes`` (``BODY.PEEK``: nothing is marked seen),
    parsed by imap-tools. Its own ``fetch`` reads whole messages, attachments and
    all; a list needs only each one's start, so the partial FETCH is sent here."""
    status, data = box.client.uid(
        "FETCH", ",".join(uids), f"(UID FLAGS BODY.PEEK[]<0.{max_bytes}>)"
    )
    if status != "OK":
        raise UpstreamError(f"The mail server refused the fetch: {_text(data)}.")
    # One message is a (metadata, literal) pair, sometimes followed by the rest of
    # its metadata (FLAGS after the body) as bytes: imap-tools reads both.
    groups: list[list[Any]] = []
    for item in data:
        if isinstance(item, tuple):
            groups.append([item])
        elif isinstance(item, bytes) and groups:
            groups[-1].append(item)
    return [ImapMessage(group) for group in groups]


# -- search queries ------------------------------------------------------------


def parse_query(query: str) -> tuple[str, bytes | None]:
    """The agent's query as IMAP SEARCH criteria (built with imap-tools' ``AND``)
    and, when one term is not ASCII, that term as a UTF-8 literal.

    Plain words match anywhere in the message (``TEXT``); ``from:``, ``to:``,
    ``cc:``, ``subject:``, ``body:`` narrow to a field; ``since:`` and
    ``before:`` take a date (YYYY-MM-DD); ``is:unread`` / ``is:read`` filter by
    the seen flag. Double quotes group words into one phrase. A non-ASCII term
    goes last, as a literal: Gmail refuses 8-bit text inside a quoted string (what
    imap-tools would send), and imaplib sends at most one literal per command, so
    at most one term may contain non-ASCII text.
    """
    try:
        words = shlex.split(query)
    except ValueError:
        words = query.replace('"', " ").split()
    params: dict[str, Any] = {}
    literal: tuple[str, bytes] | None = None
    for word in words:
        key, sep, value = word.partition(":")
        key = key.lower()
        if sep and key in ("since", "before"):
            params.setdefault("date_gte" if key == "since" else "date_lt", []).append(_day(value))
            continue
        if sep and key == "is" and value.lower() in _SEEN:
            params["seen"] = _SEEN[value.lower()]
            continue
        name, term = (_FIELDS[key], value) if sep and key in _FIELDS and value else ("text", word)
        # imap-tools quotes a term but keeps line breaks, which would end the command
        term = term.replace("\r", " ").replace("\n", " ")
        if term.isascii():
            params.setdefault(name, []).append(term)
        elif literal is None:
            literal = (name.rstrip("_").upper(), term.encode("utf-8"))  # from_ -> FROM
        else:
            raise InvalidRequest("Only one search term may contain non-ASCII characters.")
    criteria = [str(AND(**params))] if params else []
    if literal is not None:
        criteria.append(literal[0])  # the literal itself follows this key
    return " ".join(criteria) or "ALL", literal[1] if literal else None


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidRequest(f"{value!r} is not a date; write it as YYYY-MM-DD.") from exc


# -- messages ------------------------------------------------------------------


def _squash(text: str) -> str:
    return " ".join(text.split())


def _addresses(*values: Any) -> str:
    """``Name <address>`` for each parsed address, comma-separated."""
    return ", ".join(_squash(v.full) for v in values if v is not None)


def _date(msg: ImapMessage) -> str:
    """ISO 8601 when the Date header parses, else the header as it is."""
    if msg.date == DEFAULT_EMAIL_DATE:  # imap-tools' stand-in for "unparsable"
        return _squash(msg.date_str)
    return msg.date.isoformat()


def body_text(msg: ImapMessage) -> tuple[str, list[str]]:
    """The message's readable text (its text/plain parts, else its HTML as text)
    and the names of its attachments."""
    attachments = [a.filename or a.content_type for a in msg.attachments]
    text = msg.text or html_to_text(msg.html)
    return _tidy(text), attachments


def html_to_text(html: str) -> str:
    """HTML mail as text: the page reader's conversion, without the title."""
    return _page_text(html)[1] if html else ""


def _tidy(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _snippet(text: str) -> str:
    flat = _squash(text)
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


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
    if isinstance(exc, UnexpectedCommandStatusError):
        return _text(exc.command_result[1]) or str(exc.command_result[0])
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    text = str(exc).strip()
    if text.startswith("b'") or text.startswith('b"'):
        text = text[2:-1]
    return text or type(exc).__name__


def _close(box: BaseMailBox) -> None:
    try:
        box.client.logout()
    except Exception:
        try:
            box.client.shutdown()
        except Exception:
            pass
