"""Token accounting without a tokenizer.

Method: a character estimate, one token per 4 characters (rounded up) of every
text the next request would carry (system prompt, each message part, tool
names, descriptions and JSON schemas), plus 4 tokens of framing per message
and 765 per image (a typical high-detail tile budget). Providers differ by
±20 % around this; it is used for the 80 % auto-compaction trigger and
``GET /context``, where being roughly right early beats being exact late.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 765


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, BinaryContent):
        return IMAGE_TOKENS
    if isinstance(content, Sequence):
        return sum(_content_tokens(item) for item in content)
    return text_tokens(json.dumps(content, default=str))


def message_tokens(message: ModelMessage) -> int:
    total = MESSAGE_OVERHEAD
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if isinstance(part, UserPromptPart | ToolReturnPart):
                total += _content_tokens(part.content)
            else:
                total += _content_tokens(getattr(part, "content", ""))
    elif isinstance(message, ModelResponse):
        for rpart in message.parts:
            if isinstance(rpart, TextPart | ThinkingPart):
                total += text_tokens(rpart.content)
            elif isinstance(rpart, ToolCallPart):
                total += text_tokens(rpart.tool_name + rpart.args_as_json_str())
    return total


def messages_tokens(messages: Iterable[ModelMessage]) -> int:
    return sum(message_tokens(m) for m in messages)


def tool_tokens(tools: Iterable[ToolDefinition]) -> int:
    return sum(
        text_tokens(t.name + (t.description or "") + json.dumps(t.parameters_json_schema))
        for t in tools
    )
