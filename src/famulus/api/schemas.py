"""Shared request/response model bases.

Request bodies are strict: wrong types and unknown fields are 422s, as the
contract demands, rather than being coerced or ignored.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path
from pydantic import BaseModel, ConfigDict

# SQLite row ids are signed 64-bit; a larger number in a path can name
# nothing, and would otherwise overflow inside the driver.
MAX_ROW_ID = 2**63 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="Numeric id (1 … 2⁶³−1).")]


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(BaseModel):
    detail: str
    code: str


class StatusBody(BaseModel):
    status: str
