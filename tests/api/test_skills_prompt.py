"""The agent knows its skills: the system prompt lists them (name and description,
never the instructions), ``load_skill`` reads one, ``GET /context`` counts them,
and the list stays bounded with fifty skills installed."""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.test import TestModel
from tests.support.chat_models import events_until, install_model, resolved, scripted
from tests.support.sessions import new_session

from famulus.agent.prompt import SKILLS_BLOCK_CHARS
from famulus.agent.tokens import text_tokens
from famulus.chat.manager import ChatInput
from famulus.settings import Settings

BODY = "SECRET-BODY-MARKER: first ask which city, then answer in Celsius."


def _install(settings: Settings, name: str, description: str, body: str = "Do it.") -> None:
    folder = settings.skills_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n{body}\n"
    )


def _instructions(messages: list[ModelMessage]) -> str:
    request = next(m for m in reversed(messages) if isinstance(m, ModelRequest))
    return request.instructions or ""


def _tool_return(messages: list[ModelMessage]) -> str:
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    return str(next(p for p in reversed(parts) if isinstance(p, ToolReturnPart)).content)


async def _run(
    app: Any, client: httpx.AsyncClient, name: str, *, read_only: bool = False
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """One run in which the model loads skill ``name``: (system prompts it saw,
    tool results it saw, the run's events)."""
    prompts: list[str] = []
    returns: list[str] = []

    def load(messages: list[ModelMessage]) -> tuple[str, str, str]:
        prompts.append(_instructions(messages))
        return ("tool", "load_skill", json.dumps({"name": name}))

    def answer(messages: list[ModelMessage]) -> str:
        returns.append(_tool_return(messages))
        return "Which city?"

    install_model(app, scripted(load, answer))
    sid = await new_session(client)
    chat = app.state.container.chat
    await chat.submit(
        ChatInput(message="What's the weather like?", session_id=sid, read_only=read_only)
    )
    events = await events_until(app, sid, ("run_finished", "run_error"), timeout=15.0)
    assert events[-1]["type"] == "run_finished", events[-1]
    return prompts, returns, events


async def test_prompt_lists_skills_and_load_skill_reads_one(
    app: Any, client: httpx.AsyncClient, settings: Settings
) -> None:
    _install(settings, "weather", "Tells the weather\nfor a city.", BODY)
    _install(settings, "agenda", "Reads the person's agenda.", "AGENDA-BODY")
    prompts, returns, events = await _run(app, client, "weather")
    prompt = prompts[0]
    assert "- agenda: Reads the person's agenda." in prompt
    assert "- weather: Tells the weather for a city." in prompt
    assert "- add-model: " in prompt  # builtin skills are listed too
    assert prompt.index("- add-model") < prompt.index("- agenda") < prompt.index("- weather")
    assert "load_skill" in prompt
    assert "SECRET-BODY-MARKER" not in prompt and "AGENDA-BODY" not in prompt
    assert BODY in returns[0]
    assert returns[0].startswith("Instructions of the skill /weather")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["name"] == "load_skill" and result["error"] is False
    assert not any(e["type"] == "approval_needed" for e in events)


async def test_load_skill_agrees_with_slash_invocation(app: Any, settings: Settings) -> None:
    _install(settings, "weather", "Tells the weather.", BODY)
    (settings.skills_dir / "weather" / "report.py").write_text("print('sunny')\n")
    registry = app.state.container.skills
    invoked = registry.invocation("weather", "")
    loaded = registry.loaded("weather")
    shared = invoked.split("\n\n", 1)[1]
    assert BODY in shared and "run_skill_script" in shared and "report.py" in shared
    assert loaded.split("\n\n", 1)[1] == shared


async def test_unknown_skill_is_a_tool_error_naming_the_skills(
    app: Any, client: httpx.AsyncClient, settings: Settings
) -> None:
    _install(settings, "weather", "Tells the weather.", BODY)
    _, returns, events = await _run(app, client, "nope")
    assert returns[0].startswith("Not loaded: no skill 'nope'; available: ")
    assert "weather" in returns[0] and "add-model" in returns[0]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["error"] is True


async def test_load_skill_runs_in_a_read_only_run(
    app: Any, client: httpx.AsyncClient, settings: Settings
) -> None:
    _install(settings, "weather", "Tells the weather.", BODY)
    _, returns, events = await _run(app, client, "weather", read_only=True)
    assert BODY in returns[0]
    assert next(e for e in events if e["type"] == "tool_result")["error"] is False


async def test_context_counts_the_skills_and_fifty_stay_bounded(
    app: Any, client: httpx.AsyncClient, settings: Settings
) -> None:
    sid = await new_session(client)

    async def total() -> int:
        r = await client.get("/context", params={"session_id": sid})
        assert r.status_code == 200, r.text
        return int(r.json()["total"])

    before = await total()
    line = "- weather: Tells the weather for a city, today and the next days.\n"
    _install(settings, "weather", line.split(": ", 1)[1].strip())
    one_more = await total()
    assert abs((one_more - before) - len(line) / 4) <= 1  # exactly the one line more
    for i in range(50):
        _install(
            settings,
            f"skill-{i:02d}",
            f"Skill number {i}: drafts, files and follows up on one kind of paperwork. "
            "Use when the person mentions forms, invoices or deadlines.",
            "BODY-OF-A-MANY-SKILL",
        )
    many = await total()
    assert one_more < many <= before + text_tokens("x" * SKILLS_BLOCK_CHARS)
    prepared = await app.state.container.chat.turns.prepared(sid, resolved(TestModel()))
    block = prepared.system_prompt.split("\n\n")[1]
    assert block.endswith("\n</skills>") and len(block) <= SKILLS_BLOCK_CHARS
    assert "- skill-00: Skill number 0" in block
    assert block.split("\n")[-2].startswith("- also installed (names only): ")
    assert block.split("\n")[-2].endswith(", skill-49, weather")  # every skill is named
    assert "BODY-OF-A-MANY-SKILL" not in prepared.system_prompt
