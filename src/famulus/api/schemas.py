"""Shared request/response model bases.

Request bodies are strict: wrong types and unknown fields are 422s, as the
contract demands, rather than being coerced or ignored.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(BaseModel):
    detail: str
    code: str


class StatusBody(BaseModel):
    status: str
