"""Helpers for memory tests: a scripted memory model and a fake embeddings server.

``structured(*outputs)`` is a FunctionModel that answers each agent run with
the next output object through the agent's output tool, and records the
prompts it was given so a test can check what the memory model saw.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.support.chat_models import install_model, resolved
from tests.support.local_http import LocalHTTPServer


class Structured:
    def __init__(self, outputs: list[dict[str, Any]]) -> None:
        self.outputs = outputs
        self.prompts: list[str] = []
        self.model = FunctionModel(function=self._answer)

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.prompts.append(
            "\n".join(
                str(getattr(p, "content", "")) for m in messages for p in getattr(m, "parts", [])
            )
        )
        n = len(self.prompts) - 1
        output = self.outputs[min(n, len(self.outputs) - 1)]
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool_name=tool, args=output)])


def install_memory_model(app: Any, *outputs: dict[str, Any]) -> Structured:
    scripted = Structured(list(outputs))
    install_model(app, resolved(scripted.model, model_id="memory-test"), role="memory")
    return scripted


def fake_vector(text: str, dim: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(float).tolist()


@contextmanager
def embeddings_server(dim: int = 1536, delay: float = 0.0) -> Iterator[dict[str, Any]]:
    """An OpenAI-compatible ``POST /embeddings`` on 127.0.0.1 (deterministic vectors).

    ``GET /models`` answers too (the key check of ``POST /providers/openai/connect``).
    Set ``state["fail_after"] = n`` to answer 500 to every request after the n-th;
    ``state["texts"]`` counts the texts embedded successfully.
    Set ``state["hold_after"] = n`` to keep every request after the n-th waiting
    until ``state["release"]`` (a ``threading.Event``) is set.
    """
    state: dict[str, Any] = {
        "requests": 0,
        "texts": 0,
        "fail_after": None,
        "hold_after": None,
        "release": threading.Event(),
    }

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, payload: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (a test killed the server it served)

        def do_GET(self) -> None:  # noqa: N802
            models = [{"id": "text-embedding-3-small", "object": "model"}]
            self._send(200, json.dumps({"object": "list", "data": models}).encode())

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"] += 1
            state["auth"] = self.headers.get("Authorization")
            time.sleep(delay)
            if state["hold_after"] is not None and state["requests"] > state["hold_after"]:
                state["release"].wait(10)
            fail_after = state["fail_after"]
            if fail_after is not None and state["requests"] > fail_after:
                self._send(500, b'{"error": {"message": "overloaded"}}')
                return
            state["texts"] += len(body["input"])
            data = [
                {"index": i, "embedding": fake_vector(t, dim), "object": "embedding"}
                for i, t in enumerate(body["input"])
            ]
            self._send(200, json.dumps({"data": data, "model": body["model"]}).encode())

        def log_message(self, *args: Any) -> None:
            pass

    with LocalHTTPServer(Handler) as server:
        state["url"] = f"{server.url}/v1"
        yield state
