"""The mail area: agent tools over the account's mailbox.

``search_mail`` and ``read_mail`` only read (the folder is opened read-only and
fetched with ``BODY.PEEK``), so they form a ``read-only:`` toolset the research
sub-agent may use too. ``send_mail`` sends through the SMTP settings the e-mail
notifier uses and always asks first (``requires_approval``); it is offered only
when SMTP is configured. No tool is offered while mail is not configured or the
account is switched off (``account_enabled``).
"""

from __future__ import annotations

from email.utils import getaddresses
from typing import Any

from pydantic_ai.toolsets import FunctionToolset

from famulus.agent.outcome import failure
from famulus.agent.scope import used
from famulus.core import Core
from famulus.errors import FamulusError
from famulus.hooks import ToolsetProvider
from famulus.integrations import account
from famulus.integrations.mail import MailClient
from famulus.notify.senders import send_email
from famulus.settings import Settings

MAX_SEND_CHARS = 100_000


def read_toolset(settings: Settings) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset(id="read-only:mail")

    async def search_mail(query: str = "", limit: int = 10, folder: str = "INBOX") -> str:
        """Search the person's mailbox; newest messages first.

        Args:
            query: words to find anywhere in a message; narrow with from:, to:,
                subject:, body:, since:YYYY-MM-DD, before:YYYY-MM-DD, is:unread;
                "quoted words" form a phrase. Empty lists the latest messages.
            limit: how many messages at most (1-50).
            folder: the mail folder, e.g. INBOX, Archive or Sent.
        """
        try:
            found = await MailClient(settings).search(query, limit, folder)
        except FamulusError as exc:
            return f"Mail search failed: {exc.detail}"
        used("mail")
        if not found:
            return f"No messages in {folder} match {query!r}." if query else f"{folder} is empty."
        blocks = []
        for m in found:
            flag = " (unread)" if m.unread else ""
            blocks.append(
                f"uid {m.uid}{flag} | {m.date}\nFrom: {m.from_}\nTo: {m.to}\n"
                f"Subject: {m.subject}\n{m.snippet}"
            )
        return "\n\n".join(blocks)

    async def read_mail(uid: str | int, folder: str = "INBOX") -> str:
        """Read one message as plain text (headers, body and attachment names).

        Args:
            uid: the message's uid, as shown by search_mail.
            folder: the folder search_mail looked in.
        """
        try:
            message = await MailClient(settings).read(str(uid), folder)
        except FamulusError as exc:
            return failure(f"Could not read the message: {exc.detail}")
        used("mail")
        return message.as_text()

    toolset.add_function(search_mail)
    toolset.add_function(read_mail)
    return toolset


def send_toolset(settings: Settings) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset(id="mail-send")

    async def send_mail(to: str, subject: str, body: str) -> str:
        """Send an e-mail in the person's name (asks the person first).

        Args:
            to: recipient address(es), comma-separated.
            subject: the subject line.
            body: the message text (plain text).
        """
        problem = _check(to, subject, body)
        if problem:
            return failure(f"Not sent: {problem}")
        try:
            await send_email(settings, to, subject, body)
        except FamulusError as exc:
            return failure(f"Not sent: {exc.detail}")
        used("mail")
        return f"Sent to {to}."

    toolset.add_function(send_mail, requires_approval=True)
    return toolset


def _check(to: str, subject: str, body: str) -> str | None:
    if any(ch in to + subject for ch in "\r\n"):
        return "the recipients and subject must be single lines."
    addresses = [addr for _, addr in getaddresses([to])]
    if not addresses or any(
        "@" not in a or a.startswith("@") or a.endswith("@") for a in addresses
    ):
        return f"{to!r} is not a list of e-mail addresses."
    if len(body) > MAX_SEND_CHARS:
        return f"the body may hold at most {MAX_SEND_CHARS} characters."
    return None


def provider(core: Core) -> ToolsetProvider:
    """Asked on every run: the mail tools while mail is configured and switched on
    (``send_mail`` only with SMTP settings)."""
    settings = core.settings
    built: list[Any] = []  # one set of toolsets for every run (see agent/toolcache.py)

    async def provide() -> list[Any]:
        if not account.mail_configured(settings) or not await account.enabled(core):
            return []
        if not built:
            built.append(read_toolset(settings))
            if settings.smtp_host:
                built.append(send_toolset(settings))
        return list(built)

    return provide
