"""Unit tests of the agent's pieces: history rebuild, tokens, failures, retries, skills."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelRateLimitError,
)
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from famulus.agent import failures, history, retry, tokens
from famulus.agent.compaction import rows_to_fold, transcript
from famulus.agent.prompt import PromptInputs, build_system_prompt
from famulus.chat.skills import parse_invocation
from famulus.llm.types import ResolvedModel
from famulus.store.sessions import MessageRow


def row(i: int, role: str, content: str = "", **kw: Any) -> MessageRow:
    return MessageRow(
        id=i, session_id="s", run_id=None, role=role, content=content, created_at="t", **kw
    )


def test_history_rebuild_closes_dangling_tool_calls() -> None:
    rows = [
        row(1, "user", "hi"),
        row(2, "assistant", "", tool_calls=[{"id": "c1", "name": "current_time", "arguments": {}}]),
        row(3, "user", "again"),
    ]
    msgs = history.to_model_messages(rows)
    assert isinstance(msgs[0], ModelRequest) and isinstance(msgs[1], ModelResponse)
    parts = msgs[2].parts
    assert isinstance(parts[0], ToolReturnPart) and parts[0].content == history.INTERRUPTED_RESULT
    assert isinstance(parts[1], UserPromptPart)


def test_effective_history_after_summary() -> None:
    rows = [
        row(1, "user", "a"),
        row(2, "assistant", "b"),
        row(3, "user", "c"),
        row(4, "summary", "S", meta={"through_id": 2}),
    ]
    conv = history.effective(rows)
    assert conv.summary == "S" and [r.id for r in conv.rows] == [3]


def test_rows_to_fold_keeps_last_two_turns() -> None:
    rows = [row(i, "user" if i % 2 else "assistant", str(i)) for i in range(1, 9)]
    fold = rows_to_fold(history.Conversation(None, rows))
    assert [r.id for r in fold] == [1, 2, 3, 4]
    assert "Person: 1" in transcript(fold)
    assert rows_to_fold(history.Conversation(None, rows[:4])) == []


def test_token_estimate_is_chars_over_four() -> None:
    assert tokens.text_tokens("abcd" * 10) == 10
    msg = ModelRequest(parts=[UserPromptPart("x" * 40)])
    assert tokens.message_tokens(msg) == 10 + tokens.MESSAGE_OVERHEAD


def test_system_prompt_has_directives_time_and_session() -> None:
    text = build_system_prompt(
        PromptInputs("Be kind.", "Europe/Berlin", "Trip", ["mail"], "Old stuff", "Likes tea")
    )
    for needle in ("Be kind.", "Europe/Berlin", "Trip", "mail", "Old stuff", "Likes tea"):
        assert needle in text


def http_error(category: Any, status: int) -> ModelHTTPError:
    return ModelHTTPError.for_category(
        category, status_code=status, model_name="m", body={"error": "x"}
    )


@pytest.mark.parametrize(
    ("category", "status", "needle", "recoverable"),
    [
        (ModelAuthenticationError, 401, "api key", False),
        (ModelRateLimitError, 429, "rate", True),
        (ModelContextWindowExceededError, 400, "context", True),
        (None, 418, "http 418", True),
    ],
)
def test_failures_are_actionable(
    category: Any, status: int, needle: str, recoverable: bool
) -> None:
    exc = http_error(category, status)
    failure = failures.describe(exc)
    assert needle in failure.message.lower()
    assert failure.recoverable is recoverable
    assert "{id}" not in failure.message and "status_code:" not in failure.message


def model_of(provider: str) -> ResolvedModel:
    return ResolvedModel("my-model", provider, TestModel(), 1000, 100)


@pytest.mark.parametrize(
    ("provider", "needle"),
    [
        ("openai", "POST /providers/openai/connect"),
        ("anthropic", "POST /providers/anthropic/connect"),
        ("custom", "DELETE /models/custom/my-model, then POST /models/custom"),
        ("openai-codex", "POST /providers/openai-codex/oauth/browser/start"),
        ("test", "my-model"),
    ],
)
def test_bad_key_advice_names_the_provider(provider: str, needle: str) -> None:
    failure = failures.describe(http_error(ModelAuthenticationError, 401), model_of(provider))
    assert needle in failure.message and "{id}" not in failure.message
    assert failure.recoverable is False


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"message": "boom", "type": "server_error", "code": None},
            "The model provider answered HTTP 500 (boom). Try again later.",
        ),
        (
            {"error": {"message": "upstream down", "type": "x"}},
            "The model provider answered HTTP 500 (upstream down). Try again later.",
        ),
        (
            {"error": "bad gateway"},
            "The model provider answered HTTP 500 (bad gateway). Try again later.",
        ),
        (
            "  <html>oops</html>\n ",
            "The model provider answered HTTP 500 (<html>oops</html>). Try again later.",
        ),
        ({"code": 5}, "The model provider answered HTTP 500. Try again later."),
        (None, "The model provider answered HTTP 500. Try again later."),
    ],
)
def test_http_error_is_a_sentence(body: object, expected: str) -> None:
    exc = ModelHTTPError(500, "scripted-model", body, headers={"authorization": "Bearer sk-x"})
    failure = failures.describe(exc)
    assert failure.message == expected and failure.recoverable is True


def test_http_error_body_message_is_trimmed() -> None:
    exc = ModelHTTPError(400, "m", {"message": "word " * 200})
    message = failures.describe(exc).message
    assert len(message) < 300 and message.endswith("…). Send the message again.")


async def test_retrying_model_retries_rate_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "BASE_DELAY_S", 0.0)
    calls = {"n": 0}

    def flaky(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        if calls["n"] < 3:
            raise http_error(ModelRateLimitError, 429)
        from pydantic_ai.messages import TextPart

        return ModelResponse(parts=[TextPart("fine")])

    agent = Agent(retry.RetryingModel(FunctionModel(flaky)))
    assert (await agent.run("x")).output == "fine"
    assert calls["n"] == 3


async def test_retrying_model_gives_up_after_three() -> None:
    calls = {"n": 0}

    def down(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        raise http_error(ModelRateLimitError, 429)

    agent = Agent(retry.RetryingModel(FunctionModel(down), attempts=3))
    retry_mod_delay = retry.BASE_DELAY_S
    retry.BASE_DELAY_S = 0.0
    try:
        with pytest.raises(ModelHTTPError):
            await agent.run("x")
    finally:
        retry.BASE_DELAY_S = retry_mod_delay
    assert calls["n"] == 3


def test_testmodel_agent_runs_offline() -> None:
    assert Agent(TestModel(custom_output_text="hi")).run_sync("x").output == "hi"


def test_skill_invocation_parsing() -> None:
    assert parse_invocation("/add-model now please") == ("add-model", "now please")
    assert parse_invocation("/x") == ("x", "")
    assert parse_invocation("hello /x") is None
    assert parse_invocation("/b@d") is None
