"""The notifier types and the config each one needs.

Each type validates its own config strictly (unknown keys are refused) so a
typo is caught when the notifier is created, not when an automation fires.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from famulus.errors import InvalidRequest
from famulus.notify import apprise_url

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TelegramConfig(_Strict):
    chat_id: str = Field(min_length=1, max_length=64)


class EmailConfig(_Strict):
    to: str = Field(min_length=3, max_length=320)

    @field_validator("to")
    @classmethod
    def _address(cls, value: str) -> str:
        for part in value.split(","):
            if not _EMAIL.match(part.strip()):
                raise ValueError(f"'{part.strip()}' is not an e-mail address")
        return value


class WebhookConfig(_Strict):
    url: str = Field(min_length=1, max_length=2000)

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http:// or https:// URL")
        return value


class AppriseConfig(_Strict):
    """One apprise URL (a secret: stored in the secrets file, never shown)."""

    url: str = Field(min_length=4, max_length=4000)

    @field_validator("url")
    @classmethod
    def _usable(cls, value: str) -> str:
        return apprise_url.check(value.strip())


TYPES: dict[str, type[_Strict]] = {
    "telegram": TelegramConfig,
    "email": EmailConfig,
    "webhook": WebhookConfig,
    "apprise": AppriseConfig,
}
# Config fields that are secrets: kept in the secrets file, shown as ``<field>_hint``.
SECRET_FIELDS: dict[str, tuple[str, ...]] = {"apprise": ("url",)}


def describe_types() -> dict[str, dict[str, list[str]]]:
    return {name: {"fields": list(model.model_fields)} for name, model in TYPES.items()}


def validate_config(type_: str, config: dict[str, Any]) -> dict[str, Any]:
    model = TYPES.get(type_)
    if model is None:
        raise InvalidRequest(
            f"Unknown notifier type '{type_}'; use one of {', '.join(TYPES)}.", loc=["body", "type"]
        )
    try:
        return model.model_validate(config).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise InvalidRequest(
            f"Invalid {type_} config: {where}: {first['msg']}.",
            loc=["body", "config", *first["loc"]],
        ) from exc
