"""A scripted Anthropic Messages API server on 127.0.0.1 (same ``Turn`` scripts).

POST /v1/messages answers streamed (message_start … message_stop SSE events)
or whole; GET /v1/models lists ``models`` (the connect check calls it).
Point FAMULUS_ANTHROPIC_BASE_URL at ``server.root_url``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.support.scripted_openai import ScriptedServer, Turn

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class ScriptedAnthropic(ScriptedServer):
    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def key_ok(self, headers: Any) -> bool:
        return self.api_keys is None or headers.get("x-api-key", "") in self.api_keys

    def completion_path(self, path: str) -> bool:
        return path.endswith("/v1/messages")

    def models_body(self) -> dict[str, Any]:
        data = [
            {"id": m, "type": "model", "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
            for m in self.models
        ]
        return {
            "data": data,
            "has_more": False,
            "first_id": self.models[0],
            "last_id": self.models[-1],
        }

    def error_body(self, turn: Turn) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(turn.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": turn.error or kind}}

    def _blocks(self, turn: Turn) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        for i, (name, args) in enumerate(turn.tool_calls):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{i}_{len(self.requests)}",
                    "name": name,
                    "input": args,
                }
            )
        return blocks

    def _stop(self, turn: Turn) -> str:
        return "tool_use" if turn.tool_calls else "end_turn"

    def complete(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.models[0]),
            "content": self._blocks(turn),
            "stop_reason": self._stop(turn),
            "stop_sequence": None,
            "usage": {"input_tokens": turn.prompt_tokens, "output_tokens": turn.usage_out()},
        }

    def stream(self, turn: Turn, body: dict[str, Any]) -> Iterator[str]:
        def event(kind: str, payload: dict[str, Any]) -> str:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n"

        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.models[0]),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": turn.prompt_tokens, "output_tokens": 1},
        }
        yield event("message_start", {"message": message})
        index = 0
        if turn.text:
            yield event(
                "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
            )
            for word in turn.words():
                yield event(
                    "content_block_delta",
                    {"index": 0, "delta": {"type": "text_delta", "text": word}},
                )
            yield event("content_block_stop", {"index": 0})
            index = 1
        for block in self._blocks(turn)[index:]:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield event("content_block_start", {"index": index, "content_block": start})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield event("content_block_delta", {"index": index, "delta": delta})
            yield event("content_block_stop", {"index": index})
            index += 1
        yield event(
            "message_delta",
            {
                "delta": {"stop_reason": self._stop(turn), "stop_sequence": None},
                "usage": {"output_tokens": turn.usage_out()},
            },
        )
        yield event("message_stop", {})
