"""The mail tools against a real IMAP server (Dovecot) and a real SMTP server
(aiosmtpd), driven through chat with scripted models."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.conftest import API_KEY
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.dovecot import Dovecot, running_dovecot
from tests.support.live import free_port
from tests.support.smtp import Inbox, smtp_server

from famulus.app import create_app
from famulus.errors import NotFound, UpstreamError
from famulus.integrations.mail import MailClient
from famulus.settings import Settings


def _plain() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Anna Berg <anna@example.org>"
    msg["To"] = "alice@example.org"
    msg["Subject"] = "Lunch on Friday"
    msg["Date"] = "Tue, 03 Mar 2026 09:15:00 +0100"
    msg.set_content("Shall we meet at noon at the Blue Door cafe?\n")
    return msg.as_bytes(policy=SMTP)


def _multipart() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Jörg Müller <joerg@example.de>"
    msg["To"] = "alice@example.org"
    msg["Subject"] = "Grüße aus München"
    msg["Date"] = "Wed, 04 Mar 2026 18:00:00 +0100"
    msg.set_content("Liebe Grüße! Der Schlüssel liegt unter der Matte.\n", charset="utf-8")
    msg.add_alternative(
        "<html><body><p>Liebe Grüße! <b>HTML-Fassung</b></p></body></html>", subtype="html"
    )
    msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="plan.pdf")
    raw = msg.as_bytes(policy=SMTP)
    assert b"Gr\xc3\xbc\xc3\x9fe aus" not in raw.split(b"\r\n\r\n")[0]  # RFC 2047 encoded
    return raw


def _html_only() -> bytes:
    return (
        b"From: billing@shop.example\r\nTo: alice@example.org\r\nSubject: Invoice 4711\r\n"
        b"Date: Thu, 05 Mar 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/html; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n"
        b"\r\n<html><head><style>p{color:red}</style></head><body><p>Your invoice <b>total</b> is=\r\n"
        b" 42 EUR &amp; due in M=E4rz.</p><script>alert('x')</script></body></html>\r\n"
    )


def _simple(subject: str, body: str) -> bytes:
    return (
        f"From: news@example.com\r\nTo: alice@example.org\r\nSubject: {subject}\r\n"
        f"Date: Mon, 02 Feb 2026 10:00:00 +0000\r\n\r\n{body}\r\n"
    ).encode()


def _append(imap: Any, folder: str, raw: bytes) -> str:
    status, data = imap.append(folder, None, None, raw)
    assert status == "OK", data
    match = re.search(rb"APPENDUID \d+ (\d+)", data[0])
    assert match, data
    return match.group(1).decode()


@pytest.fixture(scope="module")
def dovecot() -> Iterator[tuple[Dovecot, dict[str, str]]]:
    with running_dovecot() as server:
        imap = server.connect()
        try:
            assert imap.create("Archive")[0] == "OK"
            assert imap.create('"Entw&APw-rfe"')[0] == "OK"  # "Entwürfe" in modified UTF-7
            uids = {
                "plain": _append(imap, "INBOX", _plain()),
                "multipart": _append(imap, "INBOX", _multipart()),
                "html": _append(imap, "INBOX", _html_only()),
                "archived": _append(imap, "Archive", _simple("Old newsletter", "Issue 12")),
                "draft": _append(imap, '"Entw&APw-rfe"', _simple("Entwurf", "half written")),
            }
        finally:
            imap.logout()
        yield server, uids


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    with smtp_server() as server:
        yield server


def _settings(tmp_path: Path, server: Dovecot | None, smtp_port: int | None, **kw: Any) -> Settings:
    extra: dict[str, Any] = {}
    if server is not None:
        extra |= {
            "imap_host": server.host,
            "imap_port": server.port,
            "imap_ssl": False,
            "account_username": server.user,
            "account_password": server.password,
        }
    if smtp_port is not None:
        extra |= {
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp_port,
            "smtp_from": "alice@example.org",
        }
    return Settings(
        home=tmp_path / "home",
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        **extra,
        **kw,
    )


@pytest.fixture
async def mail_app(
    tmp_path: Path, dovecot: tuple[Dovecot, dict[str, str]], smtp: tuple[Inbox, int]
) -> AsyncIterator[Any]:
    app = create_app(_settings(tmp_path, dovecot[0], smtp[1]))
    async with app.router.lifespan_context(app):
        yield app


async def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://famulus.test",
        headers={"Authorization": f"Bearer {API_KEY}"},
    )


async def _run(app: Any, *turns: Any) -> tuple[str, list[dict[str, Any]]]:
    install_model(app, scripted(*turns))
    async with await _client(app) as client:
        sid = (await client.post("/sessions", json={"name": "mail"})).json()["session_id"]
        r = await client.post("/chat/message", json={"message": "mail?", "session_id": sid})
        assert r.status_code == 202, r.text
        return sid, await events_until(app, sid, ("run_finished", "run_failed"), timeout=20)


def _result(events: list[dict[str, Any]], name: str) -> str:
    call = next(e for e in events if e["type"] == "tool_call" and e["name"] == name)
    result = next(
        e for e in events if e["type"] == "tool_result" and e["tool_id"] == call["tool_id"]
    )
    assert result["error"] is False, result
    return str(result["result"])


def _flags(server: Dovecot, folder: str = "INBOX") -> str:
    imap = server.connect()
    try:
        imap.select(folder, readonly=True)
        return repr(imap.uid("FETCH", "1:*", "(FLAGS)")[1])
    finally:
        imap.logout()


async def test_search_mail_finds_seeded_messages(
    mail_app: Any, dovecot: tuple[Dovecot, dict[str, str]]
) -> None:
    server, uids = dovecot
    _, events = await _run(
        mail_app,
        ("tool", "search_mail", '{"query": "from:anna lunch"}'),
        ("tool", "search_mail", '{"query": ""}'),
        ("tool", "search_mail", '{"query": "subject:Grüße"}'),
        ("tool", "search_mail", '{"query": "nothing-like-this"}'),
        "Found it",
    )
    results = [
        str(e["result"])
        for e in events
        if e["type"] == "tool_result" and e.get("error") is False and "result" in e
    ]
    assert len(results) == 4, events
    first, latest, umlaut, none = results
    assert f"uid {uids['plain']} (unread)" in first and "Lunch on Friday" in first
    assert "Anna Berg <anna@example.org>" in first and "Blue Door cafe" in first
    assert "2026-03-03T09:15:00+01:00" in first and "Invoice" not in first
    # Newest first: the last appended message leads the list.
    assert latest.index("Invoice 4711") < latest.index("Grüße aus München")
    assert latest.index("Grüße aus München") < latest.index("Lunch on Friday")
    assert "Old newsletter" not in latest  # another folder
    assert "Grüße aus München" in umlaut and "Jörg Müller" in umlaut and "Lunch" not in umlaut
    assert "No messages in INBOX match" in none
    assert "\\\\Seen" not in _flags(server)  # searching marks nothing read


async def test_read_mail_decodes_multipart_and_html(
    mail_app: Any, dovecot: tuple[Dovecot, dict[str, str]]
) -> None:
    server, uids = dovecot
    _, events = await _run(
        mail_app,
        ("tool", "read_mail", f'{{"uid": {uids["multipart"]}}}'),  # a number works too
        "Read it",
    )
    text = _result(events, "read_mail")
    assert "Subject: Grüße aus München" in text
    assert "From: Jörg Müller <joerg@example.de>" in text
    assert "Der Schlüssel liegt unter der Matte." in text
    assert "HTML-Fassung" not in text and "<p>" not in text  # text/plain preferred
    assert "Attachments: plan.pdf" in text and "PDF-1.4" not in text

    message = await MailClient(mail_app.state.container.settings).read(uids["html"])
    assert message.subject == "Invoice 4711"
    assert "Your invoice total is 42 EUR & due in März." in message.body
    assert "<" not in message.body and "alert" not in message.body and "color" not in message.body
    assert "\\\\Seen" not in _flags(server)  # BODY.PEEK: reading marks nothing read


async def test_named_folders(mail_app: Any, dovecot: tuple[Dovecot, dict[str, str]]) -> None:
    _, uids = dovecot
    client = MailClient(mail_app.state.container.settings)
    archived = await client.search("newsletter", folder="Archive")
    assert [(m.uid, m.subject) for m in archived] == [(uids["archived"], "Old newsletter")]
    drafts = await client.search("", folder="Entwürfe")
    assert [m.subject for m in drafts] == ["Entwurf"]
    read = await client.read(uids["archived"], "Archive")
    assert read.body == "Issue 12" and read.folder == "Archive"
    with pytest.raises(NotFound, match="no mail folder 'Nope'"):
        await client.search("", folder="Nope")
    with pytest.raises(NotFound, match="no message with uid 999"):
        await client.read("999")
    with pytest.raises(NotFound, match="not a message uid"):
        await client.read("1; DELETE")
    assert len(await client.search("", limit=2)) == 2
    assert await client.search("since:2026-03-05") and not await client.search("since:2030-01-01")


async def test_folder_names_travel_in_modified_utf7(
    mail_app: Any, dovecot: tuple[Dovecot, dict[str, str]]
) -> None:
    """ "&" and non-ASCII survive the trip to the server, and a line break in a
    name cannot end the command early (it is encoded, so no such folder)."""
    server, _ = dovecot
    imap = server.connect()
    try:
        assert imap.create('"R&-D &ZeVnLIqe-"')[0] == "OK"  # "R&D 日本語"
        _append(imap, '"R&-D &ZeVnLIqe-"', _simple("Research notes", "Week 3"))
    finally:
        imap.logout()
    client = MailClient(mail_app.state.container.settings)
    assert [m.subject for m in await client.search("", folder="R&D 日本語")] == ["Research notes"]
    with pytest.raises(NotFound, match="no mail folder"):
        await client.search("", folder="INBOX\r\nA1 DELETE INBOX")
    assert await client.search("subject:Lunch")  # INBOX is still there


async def test_imap_failures_are_clear(
    tmp_path: Path, dovecot: tuple[Dovecot, dict[str, str]]
) -> None:
    server, _ = dovecot
    wrong = _settings(tmp_path, server, None).model_copy(
        update={"account_password": SecretStr("wrong")}
    )
    with pytest.raises(UpstreamError, match="refused the login"):
        await MailClient(wrong).search()
    closed = wrong.model_copy(update={"imap_port": free_port()})
    with pytest.raises(UpstreamError, match="Could not connect.*connection refused"):
        await MailClient(closed).search()


async def _approval(app: Any, approved: bool) -> list[dict[str, Any]]:
    args = '{"to": "bob@example.org", "subject": "Grüße", "body": "See you at 8. — Alice"}'
    install_model(app, scripted(("tool", "send_mail", args), "Done"))
    async with await _client(app) as client:
        sid = (await client.post("/sessions", json={"name": "send"})).json()["session_id"]
        run = await client.post("/chat/message", json={"message": "write bob", "session_id": sid})
        events = await events_until(app, sid, "approval_needed", timeout=20)
        need = events[-1]
        assert need["name"] == "send_mail" and need["args"]["to"] == "bob@example.org"
        r = await client.post(
            "/tools/result",
            json={"run_id": run.json()["run_id"], "tool_id": need["tool_id"], "approved": approved},
        )
        assert r.status_code == 200, r.text
        return await events_until(app, sid, "run_finished", timeout=20)


async def test_send_mail_approved_is_delivered(mail_app: Any, smtp: tuple[Inbox, int]) -> None:
    events = await _approval(mail_app, True)
    assert _result(events, "send_mail") == "Sent to bob@example.org."
    inbox, _ = smtp
    assert len(inbox.messages) == 1
    sent = inbox.messages[0]
    assert sent["To"] == "bob@example.org" and sent["From"] == "alice@example.org"
    assert "See you at 8." in sent.get_payload(decode=True).decode("utf-8")


async def test_send_mail_denied_sends_nothing(mail_app: Any, smtp: tuple[Inbox, int]) -> None:
    events = await _approval(mail_app, False)
    result = next(e for e in events if e["type"] == "tool_result")
    assert "declined" in result["result"]
    assert smtp[0].messages == []


def _offered_model(seen: list[list[str]]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(sorted(t.name for t in info.function_tools))
        return ModelResponse(parts=[TextPart("ok")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        seen.append(sorted(t.name for t in info.function_tools))
        yield "ok"

    return FunctionModel(respond, stream_function=stream)


async def _offered(app: Any) -> list[str]:
    seen: list[list[str]] = []
    install_model(app, _offered_model(seen))
    async with await _client(app) as client:
        sid = (await client.post("/sessions", json={"name": "o"})).json()["session_id"]
        await client.post("/chat/message", json={"message": "hi", "session_id": sid})
        await events_until(app, sid, "run_finished")
    return seen[0]


async def test_tools_offered_only_when_configured_and_on(
    tmp_path: Path, dovecot: tuple[Dovecot, dict[str, str]], smtp: tuple[Inbox, int]
) -> None:
    mail = {"search_mail", "read_mail", "send_mail"}
    server = dovecot[0]
    cases = [
        ("none", _settings(tmp_path / "a", None, smtp[1]), set()),
        ("imap only", _settings(tmp_path / "b", server, None), {"search_mail", "read_mail"}),
        ("imap and smtp", _settings(tmp_path / "c", server, smtp[1]), mail),
    ]
    for label, settings, expected in cases:
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            assert mail & set(await _offered(app)) == expected, label
            if expected == mail:
                async with await _client(app) as client:
                    r = await client.patch("/config", json={"account_enabled": False})
                    assert r.status_code == 200, r.text
                assert mail & set(await _offered(app)) == set(), "switched off"
