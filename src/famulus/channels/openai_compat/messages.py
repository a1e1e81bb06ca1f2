"""The new message in an OpenAI chat request.

OpenAI clients send the whole conversation every time, while famulus keeps
the session's history itself. So only the last message counts, and it must
be the person's: its text parts become the message and its ``data:`` image
URLs its images. Earlier messages (and system messages: famulus's own
directives are its system prompt) are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from famulus.errors import InvalidRequest

MAX_TEXT_CHARS = 100_000  # as POST /chat/message
MAX_IMAGES = 20
_DATA_URL = re.compile(r"^data:([a-zA-Z0-9.+/-]+);base64,(.*)$", re.DOTALL)


@dataclass(frozen=True)
class NewMessage:
    text: str
    images: list[dict[str, str]] | None


def last_user_message(messages: list[dict[str, Any]]) -> NewMessage:
    """The message famulus answers: the last one, which must have role ``user``."""
    if not messages:
        raise InvalidRequest("messages: send at least one message.", loc=["body", "messages"])
    index = len(messages) - 1
    last = messages[index]
    if last.get("role") != "user":
        raise InvalidRequest(
            "messages: the last message must be the person's (role 'user'); famulus "
            "answers one new user message per request and keeps the conversation itself.",
            loc=["body", "messages", index, "role"],
        )
    text, images = _content(last.get("content"), index)
    if not text.strip() and not images:
        raise InvalidRequest(
            "messages: the last user message is empty; send some text or an image.",
            loc=["body", "messages", index, "content"],
        )
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidRequest(
            f"messages: the last user message is longer than {MAX_TEXT_CHARS:,} characters.",
            loc=["body", "messages", index, "content"],
        )
    return NewMessage(text, images or None)


def _content(content: Any, index: int) -> tuple[str, list[dict[str, str]]]:
    """Text and images of one message's ``content`` (a string or a list of parts)."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[dict[str, str]] = []
    for number, part in enumerate(content):
        where: list[str | int] = ["body", "messages", index, "content", number]
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("text") or ""))
        elif kind == "image_url":
            images.append(_image(part.get("image_url"), where))
        else:
            raise InvalidRequest(
                f"messages: a content part of type '{kind}' is not supported; "
                "send 'text' and 'image_url' parts.",
                loc=where,
            )
    if len(images) > MAX_IMAGES:
        raise InvalidRequest(
            f"messages: at most {MAX_IMAGES} images per message.",
            loc=["body", "messages", index, "content"],
        )
    return "\n".join(t for t in texts if t), images


def _image(image_url: Any, where: list[str | int]) -> dict[str, str]:
    """An ``image_url`` part as famulus's image: only inline ``data:`` URLs, since
    fetching an address a client names would let it make the server reach anywhere."""
    url = image_url.get("url") if isinstance(image_url, dict) else None
    found = _DATA_URL.match(url or "")
    if found is None:
        raise InvalidRequest(
            "messages: an image_url must be a base64 data: URL "
            "(data:image/png;base64,...); famulus does not fetch images from addresses.",
            loc=where,
        )
    return {"media_type": found.group(1).lower(), "data": found.group(2)}


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The text of every user message in the request, in order, read leniently
    (only to compare the client's conversation with the session's history)."""
    texts: list[str] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            parts = [str(p.get("text") or "") for p in content if p.get("type") == "text"]
            content = "\n".join(t for t in parts if t)
        texts.append(content if isinstance(content, str) else "")
    return texts
