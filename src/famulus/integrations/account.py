"""The mail and calendar account: whether it is configured and switched on.

The account is configured through settings (``FAMULUS_ACCOUNT_*``,
``FAMULUS_IMAP_*``, ``FAMULUS_CALDAV_URL``) because its credentials belong to
the machine's owner, not to an API client; ``PATCH /config`` only switches it
on and off (``account_enabled``).
"""

from __future__ import annotations

from famulus import config_keys
from famulus.core import Core
from famulus.settings import Settings


def mail_configured(settings: Settings) -> bool:
    return bool(settings.imap_host and settings.account_username and settings.account_password)


def calendar_configured(settings: Settings) -> bool:
    return bool(settings.caldav_url)


def configured(settings: Settings) -> bool:
    return mail_configured(settings) or calendar_configured(settings)


async def enabled(c: Core) -> bool:
    """The switch; until it is set, a configured account is on."""
    default = configured(c.settings) or config_keys.DEFAULTS.get(config_keys.ACCOUNT_ENABLED)
    value = await c.kv.get(config_keys.ACCOUNT_ENABLED, default)
    return bool(value)


async def active(c: Core) -> bool:
    """Tools and triggers use the account only when it is both configured and on."""
    return configured(c.settings) and await enabled(c)
