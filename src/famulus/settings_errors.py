"""Turn a settings failure into lines a person can act on.

A bad setting must stop the start with the setting's name as the person wrote
it (``FAMULUS_PORT`` or ``--port``), the value and what is allowed, not a
pydantic traceback. Values of secret settings are never echoed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping

from pydantic import SecretStr, ValidationError
from pydantic_settings import SettingsError

from famulus.settings import Settings

_PREFIX = "FAMULUS_"


def settings_errors(exc: Exception, cli: Mapping[str, object]) -> Iterator[str]:
    """One line per invalid setting."""
    if isinstance(exc, ValidationError):
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            yield _line(field, error.get("input"), _allowed(error["msg"]), cli)
    elif isinstance(exc, SettingsError):
        found = re.search(r'field "([^"]+)"', str(exc))
        field = found.group(1) if found else "?"
        value = os.environ.get(_PREFIX + field.upper())
        yield _line(field, value, "must be valid JSON of the setting's type", cli)
    else:
        yield str(exc)


def _line(field: str, value: object, allowed: str, cli: Mapping[str, object]) -> str:
    name = f"--{field.replace('_', '-')}" if field in cli else _PREFIX + field.upper()
    return f"invalid setting {name}={_show(field, value)}: {allowed}"


def _show(field: str, value: object) -> str:
    info = Settings.model_fields.get(field)
    if info is not None and "SecretStr" in str(info.annotation) or isinstance(value, SecretStr):
        return "<hidden>"
    return repr(value) if isinstance(value, str) else str(value)


def _allowed(message: str) -> str:
    """pydantic's message, minus its 'Value error, ' lead-in, as a lower-case clause."""
    text = message.removeprefix("Value error, ")
    return text[:1].lower() + text[1:]
