"""Shared request/response model bases.

Request bodies are strict: wrong types and unknown fields are 422s, as the
contract demands, rather than being coerced or ignored.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from famulus.errors import InvalidRequest

# SQLite row ids are signed 64-bit; a larger number in a path can name
# nothing, and would otherwise overflow inside the driver.
MAX_ROW_ID = 2**63 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="Numeric id (1 … 2⁶³−1).")]

# C0 and C1 control characters (including TAB, CR and LF), DEL, and the
# Unicode line and paragraph separators.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _plain(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters (line breaks, tabs and the like)")
    if not value.strip():
        raise ValueError("must not be blank")
    return value


# Names shown in lists, titles and mail subjects: one line, no control
# characters (a 422 at ["body","name"] otherwise). The length limits sit
# before the check so a too-long name gets the usual string message.
NoControlChars = AfterValidator(_plain)
PlainName = Annotated[str, StringConstraints(min_length=1, max_length=200), NoControlChars]
ShortPlainName = Annotated[str, StringConstraints(min_length=1, max_length=64), NoControlChars]


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    def require_some_change(self) -> None:
        """PATCH bodies: a field sent as null changes nothing and is called out as such."""
        nulls = sorted(f for f in self.model_fields_set if getattr(self, f) is None)
        if nulls:
            raise InvalidRequest(
                f"{nulls[0]}: may not be null; leave it out to keep it as it is.",
                loc=["body", nulls[0]],
            )
        if not self.model_fields_set:
            raise InvalidRequest("Send at least one field to change.")


class Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class ServiceBody(BaseModel):
    """A response declared over a dict a service builds: a key the service
    returns but the model lacks is an error, not silently dropped, so the
    model and the body cannot drift apart unnoticed (the tests hit a 500)."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    detail: str
    code: str


class StatusBody(BaseModel):
    status: str
