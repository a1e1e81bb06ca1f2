"""Session history rows → the message list a model sees.

Compaction never deletes rows: a ``summary`` row records (in ``meta.through_id``)
the last raw row it covers. The model sees the latest summary (in the system
prompt) plus the raw rows after it. A summary whose last covered row is gone
is void: a revert removed rows it folds (a revert drops such summaries itself;
this catches one a compaction was still writing while the revert ran). Tool calls left without a result (a run
cancelled or killed mid-tool) get a synthetic "interrupted" result, because
providers reject a conversation with a dangling tool call.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)

from famulus.store.sessions import MessageRow

CONVERSATION_ROLES = ("user", "assistant", "tool")
INTERRUPTED_RESULT = "No result: the run stopped before this tool finished."


@dataclass
class Conversation:
    """What the next request carries: an optional summary plus the raw rows after it."""

    summary: str | None
    rows: list[MessageRow] = field(default_factory=list)
    summary_id: int | None = None


def effective(rows: list[MessageRow]) -> Conversation:
    present = {r.id for r in rows}
    summaries = [r for r in rows if r.role == "summary" and r.through_id in present]
    if not summaries:
        return Conversation(None, [r for r in rows if r.role in CONVERSATION_ROLES])
    last = summaries[-1]
    through = last.through_id
    kept = [r for r in rows if r.role in CONVERSATION_ROLES and r.id > through]
    return Conversation(last.content, kept, last.id)


def user_content(text: str, images: list[dict[str, str]] | None) -> str | list[UserContent]:
    if not images:
        return text
    content: list[UserContent] = [text] if text else []
    for image in images:
        content.append(
            BinaryContent(data=base64.b64decode(image["data"]), media_type=image["media_type"])
        )
    return content


class _Builder:
    def __init__(self) -> None:
        self.messages: list[ModelMessage] = []
        self.request_parts: list[ModelRequestPart] = []
        self.open_calls: dict[str, str] = {}  # tool_call_id -> tool name

    def add(self, row: MessageRow) -> None:
        if row.role == "user":
            self._close_calls()
            self.request_parts.append(UserPromptPart(user_content(row.content, row.images)))
        elif row.role == "tool":
            call_id = row.tool_call_id or ""
            if call_id not in self.open_calls:
                return  # a result whose call was compacted away
            name = self.open_calls.pop(call_id)
            self.request_parts.append(
                ToolReturnPart(
                    tool_name=row.tool_name or name, content=row.content, tool_call_id=call_id
                )
            )
        elif row.role == "assistant":
            self._close_calls()
            self._flush_request()
            self.messages.append(ModelResponse(parts=self._response_parts(row)))

    def _response_parts(self, row: MessageRow) -> list[ModelResponsePart]:
        parts: list[ModelResponsePart] = [TextPart(row.content)] if row.content else []
        for call in row.tool_calls or []:
            parts.append(ToolCallPart(call["name"], call.get("arguments") or {}, call["id"]))
            self.open_calls[call["id"]] = call["name"]
        return parts or [TextPart("")]

    def _close_calls(self) -> None:
        for call_id, name in self.open_calls.items():
            self.request_parts.append(
                ToolReturnPart(tool_name=name, content=INTERRUPTED_RESULT, tool_call_id=call_id)
            )
        self.open_calls.clear()

    def _flush_request(self) -> None:
        if self.request_parts:
            self.messages.append(ModelRequest(parts=self.request_parts))
            self.request_parts = []

    def finish(self) -> list[ModelMessage]:
        self._close_calls()
        self._flush_request()
        return self.messages


def to_model_messages(rows: list[MessageRow]) -> list[ModelMessage]:
    """Rebuild pydantic-ai messages; leading assistant/tool rows are dropped."""
    start = next((i for i, r in enumerate(rows) if r.role == "user"), len(rows))
    builder = _Builder()
    for row in rows[start:]:
        builder.add(row)
    return builder.finish()
